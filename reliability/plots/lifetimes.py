"""Figure of component lifetimes: Kaplan-Meier survival and the fitted models' curves.

Kaplan-Meier survival with its confidence band and the fitted exponential / Weibull /
log-normal survival curves (from :func:`reliability.models.lifetimes.fit_lifetimes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from scipy import stats

from reliability.plots.style import colour, new_axes, plain_text

__all__ = ["model_survival", "plot_lifetimes"]


def model_survival(model: str, params: dict[str, float], t: np.ndarray) -> np.ndarray:
    """Evaluate the survival ``S(t)`` of a fitted model in lifelines' parametrisation.

    Exponential ``exp(−t/λ)``, Weibull ``exp(−(t/λ)^ρ)``, log-normal ``1 − Φ((ln t − μ)/σ)``.

    Parameters
    ----------
    model : {"exponential", "weibull", "lognormal"}
        The model's name.
    params : dict of str to float
        The model's parameters as in ``LifetimeFit.models[model]["params"]`` (``lambda_``,
        ``rho_``, ``mu_``, ``sigma_``).
    t : numpy.ndarray
        Times [the lifetime table's unit], >= 0.

    Returns
    -------
    numpy.ndarray
        S(t), in [0, 1], same shape as ``t``.

    Raises
    ------
    ValueError
        For an unknown model.
    """
    t = np.asarray(t, float)
    if model == "exponential":
        return np.exp(-t / params["lambda_"])
    if model == "weibull":
        return np.exp(-((t / params["lambda_"]) ** params["rho_"]))
    if model == "lognormal":
        with np.errstate(divide="ignore"):
            return stats.norm.sf((np.log(t) - params["mu_"]) / params["sigma_"])
    raise ValueError(f"unknown model {model!r}")


@plain_text
def plot_lifetimes(result: Any, group: str | None = None, ax: Axes | None = None) -> Axes:
    """Plot Kaplan-Meier survival and the fitted models' survival curves of one group.

    Parameters
    ----------
    result : LifetimeResult
        The :class:`~reliability.models.lifetimes.LifetimeResult`.
    group : str or None
        Which group (default: the first).
    ax : matplotlib.axes.Axes or None
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
        The Kaplan-Meier step with its confidence band, labelled ``"Kaplan-Meier"``, and each
        model's curve labelled by its name.
    """
    ax = new_axes(ax)
    fit = result.fits[0] if group is None else result.fit_of(group)
    km = fit.km
    t = km["time"].to_numpy()
    ax.step(t, km["survival"].to_numpy(), where="post", color=colour(7), label="Kaplan-Meier")
    ax.fill_between(
        t,
        km["ci_low"].to_numpy(),
        km["ci_high"].to_numpy(),
        step="post",
        color=colour(7),
        alpha=0.15,
        linewidth=0,
        label=f"{100 * (1 - result.alpha):.0f}% band",
    )
    grid = np.linspace(max(t.max(), 1e-9) / 400, max(t.max(), 1e-9), 400)
    for i, (name, m) in enumerate(fit.models.items()):
        best = " (best AIC)" if name == fit.best else ""
        ax.plot(
            grid,
            model_survival(name, m["params"], grid),
            color=colour(i),
            linewidth=1.4,
            linestyle="-" if best else "--",
            label=f"{name}{best}",
        )
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"time in service [{result.time_unit}]")
    ax.set_ylabel("surviving fraction")
    shape = f"; Weibull shape {fit.shape:.2f}: {fit.verdict}" if fit.shape is not None else ""
    ax.set_title(
        f"Lifetimes of {fit.group} ({fit.failures:,} failures of {fit.n:,}){shape}", fontsize=9
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return ax
