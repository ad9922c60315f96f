"""What the stages and section builders share.

The context a section sees, figure and table helpers, and library notes rendered in a
pipeline's terms (their hints as ``[analysis]`` keys).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from matplotlib.figure import Figure as MplFigure

from reliability.errors import Hint, message_of, render_message, value_text
from reliability.pipeline.analysis import AnalysisConfig
from reliability.pipeline.config import InputSpec, PipelineConfig
from reliability.report.model import Figure, Table, Text

__all__ = ["Context", "analysis_terms", "figure", "notes_blocks", "plot_block", "table"]


@dataclass
class Context:
    """What a section builder sees: the configuration and every stage's result.

    ``results`` is the run's :class:`~reliability.pipeline.RunResults` (not named in the
    annotation: the stages module that defines it imports this one): ``results.attribution``
    is the attribution stage's result, None when it did not run.
    """

    config: PipelineConfig
    results: Any

    @property
    def analysis(self) -> AnalysisConfig:
        """The pipeline's ``[analysis]`` settings."""
        return self.config.analysis


def _analysis_hint(hint: Hint) -> str:
    """Spell a hint as its ``[analysis]`` key (``set [analysis].min_gpus = 4``)."""
    if hint.option not in {f.name for f in dataclasses.fields(AnalysisConfig)}:
        return hint.library()  # no key of a pipeline: the library's words
    key = f"[analysis].{hint.option}"
    if hint.value is not None:
        key += f" = {value_text(hint.value, 'toml')}"
    return f"set {key}" if hint.action else key


def analysis_terms(message: str) -> str:
    """Translate a library note into a pipeline's terms: ``min_gpus=4`` -> ``[analysis].min_gpus = 4``.

    A :class:`~reliability.errors.Hinted` note's hints are spelled as ``[analysis]`` keys (an
    option that is no key keeps the library's words); plain text is kept as it is.

    Parameters
    ----------
    message : str
        The library's note.

    Returns
    -------
    str
        The note with options respelled as ``[analysis]`` keys.
    """
    return render_message(message_of(message), _analysis_hint)


def figure(size: tuple[float, float] = (6.4, 3.6)) -> tuple[MplFigure, Any]:
    """Make a figure (not pyplot's: nothing global) with constrained layout, and its axes.

    Parameters
    ----------
    size : (float, float)
        Figure size [inches].

    Returns
    -------
    (matplotlib.figure.Figure, matplotlib.axes.Axes)
        The figure and its one axes.
    """
    fig = MplFigure(figsize=size, layout="constrained")
    return fig, fig.subplots()


def plot_block(
    name: str,
    draw: Callable[[Any], Any],
    size: tuple[float, float],
    caption: str,
    data: pl.DataFrame | None = None,
) -> Figure | Text:
    """Draw a report figure, or say why there is nothing to draw.

    When the plot has nothing to draw (see :func:`reliability.plots.style.no_data`), a note
    saying why replaces an empty chart.

    Parameters
    ----------
    name : str
        The figure's name (its data file is ``data/<name>.csv``).
    draw : callable
        ``draw(ax)`` draws on the figure's axes.
    size : (float, float)
        Figure size [inches].
    caption : str
        The figure's caption.
    data : polars.DataFrame or None
        The numbers behind the figure, written beside the report.

    Returns
    -------
    Figure or Text
        The figure block, or a note.
    """
    fig, ax = figure(size)
    draw(ax)
    message = getattr(ax, "reliability_no_data", None)
    if message:
        return Text(f"{ax.get_title() or name}: {message}.", kind="note")
    return Figure(name, fig, caption, data)


def table(name: str, frame: pl.DataFrame, caption: str, **kw: Any) -> Table:
    """Make a report table block.

    Parameters
    ----------
    name : str
        The table's name (its data file is ``data/<name>.csv``).
    frame : polars.DataFrame
        The table.
    caption : str
        Its caption.
    **kw
        Passed to :class:`~reliability.report.Table` (``max_rows``, ``wrap``).

    Returns
    -------
    Table
        The block.
    """
    return Table(name, frame, caption, **kw)


def notes_blocks(result: Any) -> list[Text]:
    """Turn a result's notes (what it could not estimate and why) into note paragraphs.

    Parameters
    ----------
    result : object
        A result with ``notes`` (a list of str), or without.

    Returns
    -------
    list of Text
        One note per entry, in a pipeline's terms, each a capitalised sentence.
    """
    texts = [analysis_terms(n) for n in (getattr(result, "notes", None) or [])]
    return [
        Text(t[:1].upper() + t[1:] + ("" if t.endswith(".") else "."), kind="note") for t in texts
    ]


def sim_cluster_config(spec: InputSpec) -> Any:
    """Build the simulator config of a ``simulate-cluster`` input.

    Parameters
    ----------
    spec : InputSpec
        The input: its preset, with its ``days`` override.

    Returns
    -------
    ClusterConfig
        The configuration the input simulates (the ``cluster_data`` stage and the lemon
        stage's backtest use the same one).
    """
    from reliability.sim.config import load_preset

    sim_cfg = load_preset(spec.preset)
    return sim_cfg.with_days(spec.days) if spec.days else sim_cfg
