"""The report of a pipeline run, as data (:class:`~reliability.report.model.Report`).

The report layer does not run or import the stages: a pipeline's
:class:`~reliability.pipeline.RunResult` assembles its own report
(:func:`reliability.pipeline.report.build_report`: the action list, the headline numbers, and
one section per analysis, each built next to the stage it renders), and this layer renders it.
It knows the stages only by the names of the results the headline numbers read
(:func:`reliability.report.actions.headline_cards`: attributes of a
:class:`~reliability.pipeline.RunResults`).
"""

from __future__ import annotations

from typing import Any

from reliability.report.model import Report

__all__ = ["build_report"]


def build_report(run: Any) -> Report:
    """Return the :class:`Report` of a run.

    Parameters
    ----------
    run : object
        Anything with a ``build_report()`` method returning a :class:`Report`, e.g. a
        :class:`~reliability.pipeline.RunResult`.

    Returns
    -------
    Report
        What ``run.build_report()`` returned.

    Raises
    ------
    TypeError
        If ``run.build_report()`` returns anything else.
    """
    report = run.build_report()
    if not isinstance(report, Report):
        raise TypeError(f"{type(run).__name__}.build_report() returned {type(report).__name__}")
    return report
