"""Stages ``components`` and ``pod_components`` and their "Component lifetimes" sections.

Lifetimes per component type and the time between failures per system
(:func:`reliability.models.lifetimes.components.component_reliability`), on the cluster's Dataset and on
the pods' (each has an inventory only when its inputs wrote one: ``health``, ``lanl``, ``pod``).
"""

from __future__ import annotations

from reliability import plots
from reliability.models.lifetimes.components import ComponentReliability, component_reliability
from reliability.pipeline.steps.common import Context, notes_blocks, plot_block
from reliability.pipeline.steps.data import DataResult
from reliability.report.model import Section, Table, Text

__all__ = ["components", "components_section", "pod_components", "pod_components_section"]


def components(cluster_data: DataResult) -> ComponentReliability:
    """Run stage ``components``: component lifetimes of the cluster's Dataset.

    Parameters
    ----------
    cluster_data : DataResult
        The cluster's Dataset (the fits take no parameters).

    Returns
    -------
    ComponentReliability
        The fits, or why there is nothing to fit.
    """
    return component_reliability(cluster_data.open())


def pod_components(pod_data: DataResult) -> ComponentReliability:
    """Run stage ``pod_components``: component lifetimes of the pods' Dataset.

    Parameters
    ----------
    pod_data : DataResult
        The pods' Dataset.

    Returns
    -------
    ComponentReliability
        The fits, or why there is nothing to fit.
    """
    return component_reliability(pod_data.open())


def components_section(c: ComponentReliability, ctx: Context) -> list[Section]:
    """Build the cluster's "Component lifetimes" section (none without an inventory).

    Parameters
    ----------
    c : ComponentReliability
        The ``components`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        One section, or none when the Dataset has no components to fit.
    """
    return _section(c, "Component lifetimes", "components")


def pod_components_section(c: ComponentReliability, ctx: Context) -> list[Section]:
    """Build the pods' "Component lifetimes (pods)" section (none without an inventory).

    Parameters
    ----------
    c : ComponentReliability
        The ``pod_components`` stage's result.
    ctx : Context
        The report context.

    Returns
    -------
    list of Section
        One section, or none when the Dataset has no components to fit.
    """
    return _section(c, "Component lifetimes (pods)", "pod_components")


def _section(c: ComponentReliability, title: str, name: str) -> list[Section]:
    if c.lifetimes is None and c.interfailure is None:
        return []
    sec = Section(title)
    sec.blocks.append(
        Text(
            "MTTF = 1/(N r_f) assumes a constant hazard. Per component type, the Weibull shape of the time "
            "to its first failure says whether the hazard falls (infant mortality: burn in new parts), is "
            "constant, or rises (wear-out: replace before the failures come); MTTF and B10 (the age by "
            "which 10% have failed) are from the model AIC prefers."
        )
    )
    if c.lifetimes is not None:
        sec.blocks.append(
            Table(
                f"{name}_lifetimes",
                c.summary,
                "Time to first failure per component type [h], censored at leaving service or the "
                "observation end (Weibull shape with its 95% interval: 1 = constant hazard).",
                wrap=("verdict",),
            )
        )
        fits = [f for f in c.lifetimes.fits if f.failures > 0]
        if fits:
            top = max(fits, key=lambda f: f.failures)
            sec.blocks.append(
                plot_block(
                    f"{name}_survival",
                    lambda ax: plots.plot_lifetimes(c.lifetimes, top.group, ax=ax),
                    (6.4, 3.6),
                    f"Survival of {top.group} components (the type with the most failures): Kaplan-Meier "
                    "with its 95% band, and the fitted models.",
                    top.km,
                )
            )
    if c.interfailure is not None:
        sec.blocks.append(
            Table(
                f"{name}_interfailure",
                c.interfailure.systems,
                "Time between failures of repaired components, per system and component type: Weibull "
                "shape of the gaps pooled over components, the same allowing for components that fail at "
                "different rates (gamma frailty), system-wide, and the Crow-AMSAA trend of the system's "
                "failure intensity (Schroeder & Gibson, DSN'06; Crow 1974).",
            )
        )
    sec.blocks += notes_blocks(c)
    return [sec]
