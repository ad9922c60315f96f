"""The top of the report: what to do (each item with its evidence) and the headline numbers.

Every item is computed from a result it cites and says where the details are; nothing is
printed that the data do not support (no rate without failures, no plan without exposure, no
lemon that the detector did not flag). The inputs are the pipeline's typed results, any of
which may be missing (a stage that did not run, None).

The actions take the results they cite as arguments; :func:`headline_cards` takes a run's
:class:`~reliability.pipeline.RunResults` and reads the results it needs by their stage names
(its attributes). The report layer imports nothing of the pipeline (``tests/test_layers.py``):
these attribute names are the whole of what it knows of the stages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

from reliability import references as ref
from reliability._result import fmt_duration_h, fmt_num
from reliability.errors import join_messages
from reliability.report.model import Action, Card

__all__ = [
    "MAX_NODE_ACTIONS",
    "REPEAT_OFFENDER_MIN_FAILURES",
    "THIN_FACTOR",
    "checkpoint_actions",
    "data_actions",
    "headline_cards",
    "job_actions",
    "node_actions",
]

#: a node that failed at least this many times (distinct hardware incidents) is worth inspecting
REPEAT_OFFENDER_MIN_FAILURES = 3
#: node actions listed (the rest are counted, and shown in the node-health section)
MAX_NODE_ACTIONS = 12
#: with no failures, r_f's upper bound above this multiple of RSC-1's rate says "too thin"
THIN_FACTOR = 5.0


def _when(t: Any) -> str:
    return f"{t:%Y-%m-%d %H:%M} UTC"


def _node_namer(health: Any | None) -> Callable[[Any, str], str]:
    """Name a node as the report does: with its cluster when the data hold several."""
    clusters: set[Any] = set()
    for f in (getattr(health, n, None) for n in ("by_node", "open_now", "offenders")):
        if f is not None and f.height and "cluster" in f.columns:
            clusters |= set(f.get_column("cluster").unique().to_list())
    many = len(clusters) > 1

    def name(cluster: Any, node: str) -> str:
        return f"{node} ({cluster})" if many and cluster is not None else node

    return name


def node_actions(health: Any | None, lemon: Any | None) -> list[Action]:
    """List the nodes to inspect or drain.

    Open out-of-service intervals with a hardware reason (or a DOWN / FAIL / REPAIR state), nodes
    the lemon detector flagged, and repeat offenders (at least
    :data:`REPEAT_OFFENDER_MIN_FAILURES` distinct hardware failures: incidents, not attempts).

    Parameters
    ----------
    health : NodeHealth or None
        The ``node_health`` stage's result (None: not run).
    lemon : LemonReport or None
        The ``lemon`` stage's result (None: not run).

    Returns
    -------
    list of Action
        One action per node (a node is named once), with the evidence and the jobs it cost.
    """
    actions: list[Action] = []
    # a node is its cluster's: two clusters of a fleet may both have an ``r1n1``
    seen: set[tuple[Any, str]] = set()
    offenders = health.offenders if health is not None and health.offenders.height else None
    off = (
        {(r.get("cluster"), r["node"]): r for r in offenders.iter_rows(named=True)}
        if offenders is not None
        else {}
    )
    name = _node_namer(health)

    def cost(node: tuple[Any, str]) -> str:
        r = off.get(node)
        if not r:
            return ""
        return (
            f"; failed {r['failures']} time(s) (distinct hardware incidents), ending "
            f"{r['attempts_hit']} attempt(s) of {r['jobs_hit']} job(s), "
            f"{fmt_num(r['gpu_hours_failed'])} GPU-hours"
        )

    if health is not None and health.open_now.height:
        now = health.open_now
        urgent = now.filter(pl.col("hardware") | pl.col("state").is_in(["DOWN", "FAIL", "REPAIR"]))
        for r in urgent.iter_rows(named=True):
            key = (r.get("cluster"), r["node"])
            if key in seen:
                continue
            seen.add(key)
            why = (
                f"the reason names {r['signal']}"
                if r["hardware"] and r["signal"]
                else "the node is out of service"
            )
            actions.append(
                Action(
                    "node",
                    f"Inspect and repair {name(*key)}: {r['state']} since {_when(r['since'])} ({r['reason'] or 'no reason given'})",
                    f"out of service for {fmt_duration_h(r['hours'])} at the observation end; {why}{cost(key)}",
                    "Node health",
                )
            )
    test = getattr(lemon, "test", None) if lemon is not None else None
    if lemon is not None and (lemon.scores.height or test is not None):
        out_now = (
            {(r.get("cluster"), r["node"]) for r in health.open_now.iter_rows(named=True)}
            if health is not None and health.open_now.height
            else set()
        )
        for r in lemon.flagged.iter_rows(named=True):
            key = (r.get("cluster"), r["node"])
            if key in seen:
                continue
            seen.add(key)
            state = " (already out of service)" if key in out_now else ""
            if test is not None:
                why = (
                    f"{r['incidents']} distinct failures where {fmt_num(r['expected'])} were expected at the "
                    f"fleet's rate (x{fmt_num(r['excess'])}), q = {r['q']:.2g} at FDR {test.fdr:g}; "
                    f"{r['evidence']}{cost(key)}"
                )
            else:
                why = (
                    f"P(lemon) = {r['probability']:.2f} >= threshold {lemon.threshold:.2f} on the {lemon.window_days}-day "
                    f"window ending {r['window_end']:%Y-%m-%d}; drivers: {r['drivers'] or 'none'}{cost(key)}"
                )
            actions.append(
                Action(
                    "node",
                    f"Drain and inspect {name(*key)}: flagged as a likely lemon{state}",
                    why,
                    "Lemon nodes",
                )
            )
    for key, r in off.items():
        if key in seen or r["failures"] < REPEAT_OFFENDER_MIN_FAILURES:
            continue
        seen.add(key)
        evidence = cost(key).removeprefix("; ")
        actions.append(
            Action(
                "node",
                f"Inspect {name(*key)}: a repeat offender",
                evidence[:1].upper() + evidence[1:],  # (str.capitalize would lower "GPU")
                "Node health",
            )
        )
    if len(actions) > MAX_NODE_ACTIONS:
        rest = len(actions) - MAX_NODE_ACTIONS
        actions = actions[:MAX_NODE_ACTIONS]
        actions.append(
            Action(
                "node",
                f"... and {rest} more node(s)",
                "see the node-health and lemon sections",
                "Node health",
            )
        )
    return actions


def checkpoint_actions(plan: Any | None, mttf: Any | None) -> list[Action]:
    """State the checkpoint interval per job size for the target ETTR at the current rate.

    Parameters
    ----------
    plan : CheckpointPlan or None
        The ``plan`` stage's result (None: not run).
    mttf : MTTFResult or None
        The ``mttf`` stage's result, for the rate quoted as evidence.

    Returns
    -------
    list of Action
        The intervals per job size, or why there is no plan; empty without a plan.
    """
    if plan is None:
        return []
    rate = f"r_f {mttf.rate_.describe()}" if mttf is not None else ""
    if plan.refusal:
        return [
            Action(
                "checkpoint",
                "No checkpoint plan",
                join_messages(plan.refusal, f". {rate}" if rate else "."),  # hints kept
                "Checkpoint planning",
            )
        ]
    ok = plan.sizes.filter(pl.col("recommended_interval_min").is_not_null())
    lines = [
        f"{n:,} GPUs every {fmt_duration_h(m / 60.0)}"
        for n, m in ok.select("n_gpus", "recommended_interval_min").iter_rows()
    ]
    bad = plan.sizes.filter(pl.col("recommended_interval_min").is_null())
    p = plan.largest
    basis = f"planned with {fmt_num(1000 * p.rate_per_node_day)} failures per 1000 node-days ({p.basis})"
    evidence = (
        f"target ETTR {plan.target_ettr:.2f}, restart {fmt_duration_h(plan.restart_h)}, exact renewal form; "
        f"{basis}"
    )
    out = []
    if lines:
        out.append(
            Action(
                "checkpoint",
                "Checkpoint at least: " + "; ".join(lines),
                evidence,
                "Checkpoint planning",
            )
        )
    for n, status in bad.select("n_gpus", "status").iter_rows():
        out.append(
            Action("checkpoint", f"Jobs of {n:,} GPUs: {status}", evidence, "Checkpoint planning")
        )
    return out


def job_actions(workload: Any | None, top: int = 5) -> list[Action]:
    """List the crash-looping jobs to look at.

    Parameters
    ----------
    workload : WorkloadResult or None
        The ``workload`` stage's result (None: not run).
    top : int
        Most jobs named; one more action says how many others there are.

    Returns
    -------
    list of Action
        Per job: requeue count, what ended the attempts, secondary preemptions caused and GPU
        time.
    """
    if workload is None:
        return []
    loops = workload.crash_loops
    out = []
    for r in loops.head(top).iter_rows(named=True):
        who = ", ".join(x for x in (r["user"], r["name"]) if x) or "unknown user"
        out.append(
            Action(
                "job",
                f"Look at job {r['job_id']} ({who}, {r['gpus']:,} GPUs): it crash-loops",
                f"requeued {r['self_requeues']:,} times for something other than a preemption ({r['hw_interruptions']} "
                f"attempt(s) ended by hardware); its restarts preempted {r['secondary_caused']:,} other attempt(s) "
                f"({fmt_num(r['secondary_gpu_hours'])} GPU-hours); {fmt_num(r['gpu_hours'])} GPU-hours in all attempts "
                f"({ref.CRASH_LOOP_REQUEUES.cite()}: one job requeued 35 times caused 548 preemptions)",
                "Secondary preemptions and crash loops",
            )
        )
    if loops.height > top:
        out.append(
            Action(
                "job",
                f"... and {loops.height - top} more crash-looping job(s)",
                "see the table",
                "Secondary preemptions and crash loops",
            )
        )
    return out


def data_actions(data: list[Any], dataset_hint: str = "") -> list[Action]:
    """List the data problems: quarantined rows (by input), exports that lack ``--duplicates``.

    Parameters
    ----------
    data : list of DataResult or None
        The ``cluster_data`` and ``pod_data`` results (None entries are skipped).
    dataset_hint : str
        The Dataset folder, quoted in the commands the actions suggest.

    Returns
    -------
    list of Action
        One action per kind of problem found.
    """
    out = []
    for d in data:
        if d is None:
            continue
        q = d.inputs.filter(pl.col("rows_quarantined") > 0)
        if q.height:
            reasons = d.dataset.quarantine_reasons
            top = (
                f"; most frequent reason: {reasons['reason'][0]} ({reasons['rows'][0]:,} rows)"
                if reasons is not None and reasons.height
                else ""
            )
            out.append(
                Action(
                    "data",
                    f"{d.quarantined:,} row(s) quarantined in {q.height} input(s): check the exports",
                    ", ".join(
                        f"{p} ({n:,} of {r:,})"
                        for p, n, r in q.select("path", "rows_quarantined", "rows_read").iter_rows()
                    )
                    + top
                    + (
                        f"; `reliability info {dataset_hint}` lists example rows"
                        if dataset_hint
                        else ""
                    ),
                    "Data and quarantine" if d.kind == "cluster" else "Pod data",
                )
            )
        for path, note in d.missing_duplicates.iter_rows():
            out.append(
                Action(
                    "data", f"Re-export {path} with sacct --duplicates", note, "Data and quarantine"
                )
            )
    return out


# ---------------------------------------------------------------- headline numbers


def _rate_card(m: Any) -> Card:
    r = m.rate_
    paper = (
        f"paper: RSC-1 {ref.RSC1_FAILURE_RATE.value:.2f}, RSC-2 {ref.RSC2_FAILURE_RATE.value:.2f}"
    )
    label = f"Failure rate r_f (jobs of {m.min_gpus:,}+ GPUs)"
    if r.exposure <= 0:
        why = next(
            (n for n in m.notes if n.startswith("no exposure")), "no exposure of jobs large enough"
        )
        return Card(label, "not estimable", why, None)
    if r.rate is None:
        thin = 1000 * r.high > THIN_FACTOR * float(ref.RSC1_FAILURE_RATE.value)  # type: ignore[arg-type]
        tail = (
            f"; too little exposure to tell this cluster from one {THIN_FACTOR:g}x worse than RSC-1: "
            "collect more history"
            if thin
            else ""
        )
        return Card(
            label,
            f"below {fmt_num(1000 * r.high)} per 1000 node-days",
            f"no hardware failures in {fmt_num(r.exposure)} node-days (upper 95% bound){tail}; {paper}",
            None,
        )
    return Card(
        label,
        f"{fmt_num(1000 * r.rate)} per 1000 node-days",
        f"{r.describe()}; {paper}",
        1000 * r.rate,
    )


def headline_cards(results: Any) -> list[Card]:
    """Compute the headline numbers of a run.

    Parameters
    ----------
    results : RunResults
        A pipeline run's results (:class:`reliability.pipeline.RunResults`); the cards read its
        attributes ``mttf``, ``attribution``, ``plan``, ``node_health``, ``lemon`` and ``pod``,
        each None when that stage did not run.

    Returns
    -------
    list of Card
        r_f, the MTTF of the largest job, the checkpoint plan, node health and lemon counts, as
        far as the stages ran.
    """
    cards: list[Card] = []
    m, plan, health = results.mttf, results.plan, results.node_health
    lemon, attr = results.lemon, results.attribution
    if m is not None:
        cards.append(_rate_card(m))
        largest = (
            int(attr.jobs.get_column("n_accelerators").max() or 0)
            if attr is not None and attr.jobs.height
            else 0
        )
        if largest > 0:
            at = m.mttf_at(largest)
            cards.append(
                Card(
                    f"MTTF of a {largest:,}-GPU job (the largest)",
                    at["text"],
                    "mean time between hardware interruptions, 1/(N r_f), with the interval from r_f's",
                    at["mttf_h"],
                )
            )
    if plan is not None:
        p = plan.largest
        if plan.refusal or p is None:
            cards.append(
                Card(
                    "Checkpoint interval",
                    "not planned",
                    plan.refusal or "no job sizes to plan for",
                    None,
                )
            )
        elif p.recommended_interval_h is None:
            row = plan.sizes.row(plan.sizes.height - 1, named=True)
            cards.append(
                Card(
                    f"Checkpoint at {p.n_gpus:,} GPUs",
                    "not reachable" if not p.basis.startswith("upper") else "too little data",
                    row["status"],
                    None,
                )
            )
        else:
            cons = " (conservative: no failures seen)" if p.basis.startswith("upper") else ""
            cards.append(
                Card(
                    f"Checkpoint at {p.n_gpus:,} GPUs",
                    f"at least every {fmt_duration_h(p.recommended_interval_h)}",
                    f"for ETTR {p.target_ettr:.2f} with a {fmt_duration_h(p.restart_h)} restart, expected ETTR "
                    f"{p.ettr_at_recommended:.3f}; rate: {p.basis}{cons}",
                    60.0 * p.recommended_interval_h,
                )
            )
    if health is not None and health.window_h > 0:
        fa = health.fleet_availability
        out = health.open_now.select("cluster", "node").n_unique() if health.open_now.height else 0
        name = _node_namer(health)
        hw = (
            list(
                dict.fromkeys(  # (a node open twice, e.g. DOWN and DRAINED, is named once)
                    name(c, n)
                    for c, n in health.open_now.filter(pl.col("hardware"))
                    .select("cluster", "node")
                    .iter_rows()
                )
            )
            if out
            else []
        )
        cards.append(
            Card(
                "Fleet availability",
                f"{100 * fa:.2f}%" if fa is not None else "not assessed",
                f"{health.n_nodes:,} nodes over {fmt_duration_h(health.window_h)}; {out} out of service at the end"
                + (f" ({len(hw)} for hardware: {', '.join(hw[:5])})" if hw else ""),
                None if fa is None else 100 * fa,
            )
        )
    test = getattr(lemon, "test", None) if lemon is not None else None
    if test is not None:
        f = test.flagged
        names = ", ".join(f["node"].to_list()[:5]) + ("..." if f.height > 5 else "")
        cards.append(
            Card(
                "Lemon nodes flagged",
                f"{f.height} of {test.nodes.height:,}"
                if test.fleet_rate_per_node_day
                else "not assessed",
                (
                    f"flagged: {names}"
                    if f.height
                    else "no node fails more often than the fleet's rate allows"
                )
                + f" (statistical test, FDR {test.fdr:g}; paper: 1.2-1.7% of nodes)",
                float(f.height) if test.fleet_rate_per_node_day else None,
            )
        )
    elif lemon is not None:
        if lemon.scores.height and not getattr(lemon, "calibrated", True):
            cards.append(
                Card(
                    "Lemon nodes",
                    "not assessed",
                    f"the detector's probabilities are not calibrated for a {lemon.window_days}-day "
                    "window: see the lemon section",
                    None,
                )
            )
        elif lemon.scores.height == 0:
            cards.append(
                Card(
                    "Lemon nodes",
                    "not scored",
                    f"less than one {lemon.window_days}-day window of history",
                    None,
                )
            )
        else:
            f = lemon.flagged
            names = ", ".join(f["node"].to_list()[:5]) + ("..." if f.height > 5 else "")
            cards.append(
                Card(
                    "Lemon nodes flagged",
                    f"{f.height} of {lemon.scores.height:,}",
                    (
                        f"flagged: {names}"
                        if f.height
                        else "no node reached the detector's threshold"
                    )
                    + f" (threshold {lemon.threshold:.2f}; paper: 1.2-1.7% of nodes)",
                    float(f.height),
                )
            )
    pod = results.pod
    if pod is not None:
        cards.append(
            Card(
                "TPUv4 job availability at 3,200 chips",
                f"{100 * pod.fig1_tpuv4_3200:.1f}%",
                f"model at host availability {pod.reference_host_availability:.4f} with the pod's "
                f"measured links and OCS (the figure's curve); hosts alone "
                f"{100 * pod.fig1_tpuv4_3200_hosts:.1f}% (NSDI'24 Fig. 1: about 94%)",
                100 * pod.fig1_tpuv4_3200,
            )
        )
    return cards
