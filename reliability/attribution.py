"""Failure attribution: why did each job attempt end? (Kokolis et al. HPCA'25 §III).

Each attempt is joined with the critical health events and the node-state changes on its own
nodes around its end, as polars joins (no per-job Python loop), and classified:

- ``failure_domain``: one of :data:`DOMAINS` (``none``, ``user``, ``admin``,
  ``system_software``, ``hardware``, ``infrastructure``, ``preemption``, ``unknown``; their
  meanings are in :data:`reliability.taxonomy.FAILURE_DOMAINS`);
- ``failure_cause``: the taxonomy component of the evidence (``gpu``, ``gpu_memory``,
  ``ib_link``, ``software``...), ``unknown`` when a node failed without a signal;
- ``culprit_node``: the node the evidence is on (never a node outside the attempt's own);
- ``evidence``: what the domain rests on: ``health_event``, ``node_state``, ``exit_code``
  (a RequeueExit code) or ``job_state`` (the Slurm state alone);
- ``resource_class``: ``cpu_only`` (0 accelerators: a class of its own, never a 1-GPU job),
  ``accelerator``, or null when the accelerator count is unknown.

Evidence windows (an attempt runs from ``start`` to ``end``; ``start`` may be null for an
attempt that never started, and then only the left bound ``end - before_min`` applies):

- a **critical health event** on one of the attempt's nodes counts when its time lies in
  ``[max(start, end - before_min), end + after_min]``;
- a **hardware warning** (an Xid the taxonomy marks as a warning of the hardware, such as 63
  row remapping or 92 ECC error rate; not the application's own Xids 13, 31, 43) counts when it
  lies in ``[max(start, end - warning_before_min), end + state_slack_s]``: weaker evidence
  than any node-state change, but a GPU that reports an error minutes before the job on it
  fails is the likelier cause;
- a **node-state interval** (DOWN, DRAIN, FAIL, REPAIR) on one of its nodes counts when the
  interval *begins* in ``[max(start, end - before_min), end + state_slack_s]``: a state change
  that ends an attempt happens while it runs or at its end (Slurm sets a node DOWN and ends its
  jobs NODE_FAIL in the same second; a health-check drain requeues them at once; a prolog
  failure drains the node as it requeues the job). Evidence first, words second: the change
  counts whatever its reason's wording, unless the reason is an administrator's
  (:mod:`reliability.reasons`). Two kinds of record come after the fact and count up to
  ``end + drain_slack_s``: a DRAIN (Slurm's accounting records it when the node became
  DRAINED, once its jobs ended) and ``Node unexpectedly rebooted`` (recorded when slurmd
  registers again); each explains every failing attempt on the node that ended in the
  ``drain_slack_s`` before it (a fault on a node shared by several jobs kills them seconds
  apart, and the drain is recorded once, at the last end), unless an attempt started on the
  node in between (the node ran a new job: the failure before it was not the fault's). An interval that began before the attempt started (whether it ended
  before the start or is still open) is never evidence: Slurm does not start jobs on such
  nodes, so it is either stale or about something else. Nor is a DOWN or FAIL set after the
  end: in run 1 of the real Slurm corpus an admin set node07 FAIL 21-29 s after seven user
  failures and three exit-code requeues on it, none of which it caused (a DOWN or FAIL takes
  effect at once, so one that did not end the attempt by its end did not end it). A fault
  that is only detected later is evidence through its health event (kernel log, DCGM, a
  health check, or the signal in a drain reason), whose window reaches ``after_min`` past
  the end.

The nearest evidence to the attempt's end wins; a health event beats a node-state change,
and a failure state (DOWN, FAIL, REPAIR, or a reason Slurm itself sets such as
``Prolog error``, see :data:`reliability.taxonomy.SLURM_NODE_REASONS`) beats a plain DRAIN.
A reason Slurm sets *because* a job ended (``Epilog error``, ``Kill task failed``, ``Batch
job complete failure``: the epilog and the job's cleanup run after its end) is an aftermath:
evidence of a node problem on its own, but weaker than any fault or drain that began while
the attempt ran (on the independent generators, a health-check drain seconds before the end
followed by an epilog failure was read as ``system_software``, not the hardware fault it was).

Rules per Slurm state (the paper's rule, plus Slurm's requeue semantics):

- COMPLETED, RUNNING, PENDING, SUSPENDED, RESIZING: ``none`` (a RESIZING record is the
  segment of a job before ``scontrol update NumNodes=``, not a failure).
- PREEMPTED: ``preemption`` (both PreemptMode=CANCEL and REQUEUE print PREEMPTED).
- NODE_FAIL, BOOT_FAIL: the evidence's domain, else ``hardware`` (cause ``unknown``).
- FAILED, LAUNCH_FAILED: a critical health event (the paper's rule) or a node leaving
  service under the attempt (DOWN, FAIL, or a DRAIN whose reason is not an administrator's)
  gives its domain with the node as culprit (an unclassified reason: ``hardware``, cause
  ``unknown``); otherwise ``user``.
- REQUEUED: an exit code in ``requeue_exit_codes`` (Slurm's RequeueExit / RequeueExitHold)
  gives ``user``: the application asked to be requeued, whatever happened on its nodes (an
  application that requeues itself on hardware errors should leave that code out). Else a
  critical health event gives its domain (a health-check requeue), and a node-state change
  the node's fault (``Prolog error`` -> ``system_software``; DOWN / FAIL -> ``hardware``; a
  DRAIN without a reason Slurm knows -> ``unknown``), with the node as culprit. Else, when
  node-state history was ingested (an input with a ``node_states`` table that is not a
  point-in-time ``nodes`` snapshot, e.g. ``sacctmgr show event``), ``admin`` (``scontrol requeue`` / ``requeuehold``: the
  node stayed in service), and ``unknown`` without a culprit when no node-state history is
  available (a health-check requeue cannot be told from an admin one then).
- anything else (TIMEOUT, CANCELLED, OUT_OF_MEMORY, DEADLINE...): ``user``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import TYPE_CHECKING

import polars as pl

from reliability.errors import Hint, Hinted
from reliability.reasons import ReasonRules, classify_reasons
from reliability.taxonomy import FAILURE_DOMAINS, SLURM_NODE_REASONS

if TYPE_CHECKING:
    from reliability.store import Dataset

__all__ = ["DOMAINS", "attribute_failures", "attribution_quality", "zone_mismatch_note"]

DOMAINS = tuple(FAILURE_DOMAINS)
#: component -> failure domain of a critical event
COMPONENT_DOMAIN = {
    "filesystem": "infrastructure",
    "software": "system_software",
    "unknown": "unknown",
}
#: taxonomy domain vocabulary -> attribution domain
_TAXONOMY_DOMAIN = {"software": "system_software"}
_EVIDENCE_STATES = ("FAILED", "NODE_FAIL", "REQUEUED", "BOOT_FAIL", "LAUNCH_FAILED")
_DRAIN_EVIDENCE = ("NODE_FAIL", "REQUEUED", "BOOT_FAIL")
_NO_FAILURE = ("COMPLETED", "RUNNING", "PENDING", "SUSPENDED", "RESIZING")
_FAULT_STATES = ("DOWN", "FAIL", "REPAIR")
#: domains of an attempt that failed because of something on a node (culprit, cause)
_FAILING = ("hardware", "infrastructure", "system_software", "unknown")
#: evidence kinds, in order of strength
_HEALTH, _FAULT, _DRAIN, _AFTERMATH, _WARN, _ADMIN = 0, 1, 2, 3, 4, 5
#: reasons Slurm sets because a job ended on the node (its epilog, its cleanup): a fault's
#: aftermath, weaker than a fault or drain that began while the attempt ran
_AFTERMATH_REASONS = r"^\s*(epilog (error|failure)|kill task failed|batch job complete failure)"
#: components of a warning that is the hardware's (not the application's, software's or a
#: shared service's)
_NOT_HARDWARE = ("software", "filesystem", "unknown")
#: reader kinds whose node_states are point-in-time snapshots, not a history
_SNAPSHOT_KINDS = ("nodes",)
#: reasons Slurm records when the node comes back, after the failure they explain
_LATE_REASONS = r"^\s*node unexpectedly rebooted"


def _frames(source: Dataset | pl.DataFrame | pl.LazyFrame, health, states):
    """Return (jobs, health events, node states, node-state history known?) as LazyFrames.

    None where there are none.
    """
    if isinstance(source, (pl.DataFrame, pl.LazyFrame)):
        known = states is not None
        lazy = lambda f: None if f is None else (f.lazy() if isinstance(f, pl.DataFrame) else f)  # noqa: E731
        he, ns = lazy(health), lazy(states)
        if isinstance(health, pl.DataFrame) and health.height == 0:
            he = None
        if isinstance(states, pl.DataFrame) and states.height == 0:
            ns = None
        return source.lazy(), he, ns, known
    known = any(
        "node_states" in (i.get("rows_out") or {}) and i.get("kind") not in _SNAPSHOT_KINDS
        for i in source.inputs
    )
    return source.scan("jobs"), source.scan("health_events"), source.scan("node_states"), known


def _reason_class(reason: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(component, attribution domain) of a node-state reason Slurm itself sets, else null."""
    comp: pl.Expr = pl.lit(None, pl.String)
    dom: pl.Expr = pl.lit(None, pl.String)
    for pattern, c in reversed(SLURM_NODE_REASONS):
        hit = reason.str.contains(f"(?i){pattern}")
        comp = pl.when(hit).then(pl.lit(c.component)).otherwise(comp)
        dom = pl.when(hit).then(pl.lit(_TAXONOMY_DOMAIN.get(c.domain, c.domain))).otherwise(dom)
    return comp, dom


def _administrative_starts(ns: pl.LazyFrame, reasons: ReasonRules | None) -> pl.LazyFrame:
    """``cluster, node, start, source="slurm"`` of intervals with an administrator's reason."""
    names = ns.collect_schema().names()
    out = ns.select(
        pl.col("cluster").cast(pl.String),
        pl.col("node").cast(pl.String),
        "start",
        reason=pl.col("reason").cast(pl.String) if "reason" in names else pl.lit(None, pl.String),
        user=pl.col("user").cast(pl.String) if "user" in names else pl.lit(None, pl.String),
    )
    classes = classify_reasons(out.select("reason", "user").unique().collect(), reasons)
    admin = classes.filter(pl.col("reason_class") == "administrative").select("reason", "user")
    return out.join(admin.lazy(), on=["reason", "user"], how="semi", nulls_equal=True).select(
        "cluster", "node", "start", source=pl.lit("slurm")
    )


def _node_state_evidence(
    ns, reasons, nearest, latest_before, slack, late_slack, ended_drain
) -> list[pl.LazyFrame]:
    """Node-state changes as evidence, by the class of their reason (:mod:`reliability.reasons`).

    A DOWN, FAIL or REPAIR, or a DRAIN whose reason names a signal or is one Slurm sets, is a
    node fault; a DRAIN with an unclassified reason is a weaker fault (evidence for every
    failing state); an administrator's change is evidence only of an administrative end
    (NODE_FAIL, REQUEUED, BOOT_FAIL: the administrator took the node). A signal in the user's
    domain (Xid 13: an application fault) is no evidence against the node.
    """
    names = ns.collect_schema().names()
    state = pl.col("state").cast(pl.String)
    out = ns.filter(state.is_in((*_FAULT_STATES, "DRAIN"))).select(
        "cluster",
        "node",
        __t=pl.col("start"),
        __state=state,
        reason=pl.col("reason").cast(pl.String) if "reason" in names else pl.lit(None, pl.String),
        user=pl.col("user").cast(pl.String) if "user" in names else pl.lit(None, pl.String),
    )
    classes = classify_reasons(out.select("reason", "user").unique().collect(), reasons)
    out = out.join(classes.lazy(), on=["reason", "user"], how="left", nulls_equal=True).select(
        "cluster",
        "node",
        "__t",
        "__state",
        __reason=pl.col("reason"),
        __rclass=pl.col("reason_class"),
        __cause=pl.col("component"),
        __domain=pl.col("domain"),
    )
    admin = pl.col("__rclass") == "administrative"
    usable = ~admin & (pl.col("__domain").fill_null("") != "user")
    fault = usable & (
        pl.col("__state").is_in(_FAULT_STATES) | pl.col("__rclass").is_in(["signal", "slurm"])
    )
    drain = usable & ~fault
    aftermath = pl.col("__reason").str.contains(f"(?i){_AFTERMATH_REASONS}").fill_null(False)
    faults = out.filter(fault).with_columns(
        pl.col("__domain").fill_null("hardware"), pl.col("__cause").fill_null("unknown")
    )
    # separate as-of joins: the nearest of each kind is its only candidate on each side
    after_job, faults = faults.filter(aftermath), faults.filter(~aftermath)
    drains = out.filter(drain).with_columns(__domain=pl.lit("hardware"), __cause=pl.lit("unknown"))
    admins = out.filter(admin).with_columns(__domain=pl.lit("admin"), __cause=pl.lit("none"))
    # recorded after the fact: a drain when the node became DRAINED (its jobs done), a reboot
    # when slurmd registered again
    late = (pl.col("__state") == "DRAIN") | pl.col("__reason").str.contains(
        f"(?i){_LATE_REASONS}"
    ).fill_null(False)
    return [
        nearest(faults.drop("__state"), _FAULT, slack),
        latest_before(faults.filter(late).drop("__state"), _FAULT, late_slack),
        nearest(after_job.drop("__state"), _AFTERMATH, slack),
        latest_before(after_job.filter(late).drop("__state"), _AFTERMATH, late_slack),
        nearest(drains.drop("__state"), _DRAIN, slack),
        latest_before(drains.drop("__state"), _DRAIN, late_slack),
        nearest(admins.drop("__state"), _ADMIN, slack, ended_drain),
    ]


def _exit_codes(codes: Iterable[int]) -> list[int]:
    out = []
    for c in codes:
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= 255:
            raise ValueError(
                f"requeue_exit_codes: {c!r} is not an exit code (an integer from 0 to 255)"
            )
        out.append(c)
    return sorted(set(out))


def _as_match(frame: pl.LazyFrame, kind: int) -> pl.LazyFrame:
    """One matched piece of evidence per row: the attempt, what it says, and how close it was."""
    return frame.select(
        "__rid",
        "__cause",
        "__domain",
        "__unk",
        "__reason",
        "__rclass",
        __node=pl.col("node").cast(pl.String),
        __dist=(pl.col("__t") - pl.col("end_time")).dt.total_microseconds().abs(),
        __kind=pl.lit(kind, pl.Int8),
    )


#: columns of one matched piece of evidence (:func:`_as_match`)
_EVIDENCE_SCHEMA = {
    "__rid": pl.UInt32,
    "__cause": pl.String,
    "__domain": pl.String,
    "__unk": pl.Boolean,
    "__reason": pl.String,
    "__rclass": pl.String,
    "__node": pl.String,
    "__dist": pl.Int64,
    "__kind": pl.Int8,
}


#: the order evidence is ranked in (every column of :data:`_EVIDENCE_SCHEMA`: no ties left)
_EVIDENCE_ORDER = [
    "__rid", "__kind", "__dist", "__node", "__unk", "__cause", "__domain", "__reason", "__rclass"
]  # fmt: skip

#: the as-of joins' keys, categorical on both sides (:func:`_ended_attempts`)
_KEYS = [pl.col("cluster").cast(pl.Categorical), pl.col("node").cast(pl.Categorical)]


def _ended_attempts(jobs: pl.LazyFrame, start: pl.Expr) -> pl.LazyFrame:
    """One row per (ended attempt in a state evidence can explain, node), sorted by end."""
    return (
        jobs.filter(
            pl.col("state").cast(pl.String).is_in(_EVIDENCE_STATES)
            & pl.col("end_time").is_not_null()
        )
        .select(
            "__rid",
            "cluster",
            "end_time",
            __start=start,
            node=pl.col("nodes"),
            __drain=pl.col("state").cast(pl.String).is_in(_DRAIN_EVIDENCE),
        )
        .explode("node")
        .drop_nulls("node")
        # categorical keys: every as-of join of the evidence hashes these (tens of millions of
        # rows at millions of attempts) by cluster and node, once per kind of evidence
        .with_columns(_KEYS)
        .sort("end_time")
    )


def _one_per_node_time(events: pl.LazyFrame) -> pl.LazyFrame:
    """One event per node and time: a known cause before "unknown", then by name and reason.

    Every column an event carries is a sort key, so which of two events at the same time is
    kept does not depend on the order they were read in.
    """
    return (
        events.with_columns(_KEYS, __unk=pl.col("__cause") == "unknown")
        .sort("__t", "__unk", "__cause", "__domain", "__reason", "__rclass")
        .unique(subset=["cluster", "node", "__t"], keep="first", maintain_order=True)
    )


def _asof(
    attempts: pl.LazyFrame, ev: pl.LazyFrame, strategy: str, tolerance: timedelta
) -> pl.LazyFrame:
    """Keep the rows of ``attempts`` with an event on the node within ``tolerance``, with it.

    The as-of join carries only the event's time and row number (the attempts are tens of
    millions of (attempt, node) rows at millions of attempts, and few find an event): the
    event's other columns are joined to the matches afterwards.
    """
    ev = ev.with_row_index("__e")
    keys = ev.select("cluster", "node", "__t", "__e")
    return (
        attempts.join_asof(
            keys,
            left_on="end_time",
            right_on="__t",
            by=["cluster", "node"],
            strategy=strategy,
            tolerance=tolerance,
            check_sortedness=False,
        )
        .drop_nulls("__e")
        .join(ev.drop("cluster", "node", "__t"), on="__e")
        .drop("__e")
    )


def _nearest(
    events: pl.LazyFrame,
    kind: int,
    attempts: pl.LazyFrame,
    before: timedelta,
    after: timedelta,
) -> pl.LazyFrame:
    """Find, per (attempt, node), the event nearest the attempt's end within the window.

    Two as-of joins (latest at or before the end, earliest at or after it) instead of a
    many-to-many join, so memory stays linear in the input even on nodes with thousands of
    events. The latest event before the end is the only candidate on that side: if it precedes
    the attempt's start, every earlier one does too.
    """
    ev = _one_per_node_time(events)
    back = _asof(attempts, ev, "backward", before)
    fwd = _asof(attempts, ev, "forward", after)
    return (
        pl.concat([back, fwd])
        .filter(pl.col("__start").is_null() | (pl.col("__t") >= pl.col("__start")))
        .pipe(_as_match, kind)
    )


def _latest_before(
    events: pl.LazyFrame,
    kind: int,
    lag: timedelta,
    ended: pl.LazyFrame,
    starts: pl.LazyFrame,
    node_lists: Callable[[pl.LazyFrame], pl.LazyFrame],
) -> pl.LazyFrame:
    """Match each event recorded after the fact to the failing attempts it ended.

    Per node, within ``lag`` before it: the burst of failures that led to it. A node
    shared by several jobs drains (or reboots) once, when the last of the jobs the fault
    killed has ended, so every failing attempt on the node in the ``lag`` before the record
    is explained by it, each by the first such record after its end; unless an attempt
    started on the node between that end and the record (the node ran a new job: the
    failure before it was not the fault's; on a real cluster, an admin requeue, then a
    prolog failure of the next job on the node 40 s later).
    """
    ev = _one_per_node_time(events)
    first = _asof(ended, ev, "forward", lag)
    # the starts in the lag before some record (few), per node; then the first start on
    # the node after each failure's end: one at or before the record breaks the burst
    times = ev.select("cluster", __u=pl.col("__t")).unique().sort("__u")
    near = (
        starts.join_asof(
            times,
            left_on="__s",
            right_on="__u",
            by="cluster",
            strategy="forward",
            tolerance=lag,
            check_sortedness=False,
        )
        .drop_nulls("__u")
        .pipe(node_lists)  # (the node lists of these few starts only)
        .select("cluster", "__s", node=pl.col("__nodes"))
        .explode("node")
        .drop_nulls("node")
        .with_columns(_KEYS)
        .sort("__s")
    )
    first = (
        first.with_columns(__after=pl.col("end_time") + timedelta(microseconds=1))
        .sort("__after")
        .join_asof(
            near,
            left_on="__after",
            right_on="__s",
            by=["cluster", "node"],
            strategy="forward",
            check_sortedness=False,
        )
        .filter(pl.col("__s").is_null() | (pl.col("__s") > pl.col("__t")))
    )
    return _as_match(first, kind)


def _health_evidence(
    he: pl.LazyFrame,
    ns: pl.LazyFrame | None,
    reasons: ReasonRules | None,
    nearest: Callable[..., pl.LazyFrame],
    after: timedelta,
    slack: timedelta,
    warning_before: timedelta,
) -> list[pl.LazyFrame]:
    """Health events as evidence: critical events around the end, hardware warnings before it."""
    crit = he.filter(pl.col("severity").cast(pl.String) == "critical")
    if ns is not None:
        # a signal read from an administrator's reason ("burn-in after GPU swap (was Xid 79)")
        # is history, not a fault now: not evidence
        crit = crit.join(
            _administrative_starts(ns, reasons),
            how="anti",
            nulls_equal=True,
            left_on=["cluster", "node", "time", pl.col("source").cast(pl.String)],
            right_on=["cluster", "node", "start", "source"],
        )
    crit = crit.select(
        "cluster", "node", __t=pl.col("time"), __cause=pl.col("component").cast(pl.String)
    )
    crit = crit.with_columns(
        __domain=pl.col("__cause").replace_strict(
            COMPONENT_DOMAIN, default="hardware", return_dtype=pl.String
        ),
        __reason=pl.lit(None, pl.String),
        __rclass=pl.lit(None, pl.String),
    )
    found = [nearest(crit, _HEALTH, after)]
    # a hardware warning (Xid 63 row remapping, Xid 92 ECC rate...) on the node in the
    # minutes before a failing end: weaker evidence, after every node-state change
    warn = he.filter(
        (pl.col("severity").cast(pl.String) == "warning")
        & ~pl.col("component").cast(pl.String).is_in(_NOT_HARDWARE)
    ).select(
        "cluster",
        "node",
        __t=pl.col("time"),
        __cause=pl.col("component").cast(pl.String),
        __domain=pl.lit("hardware"),
        __reason=pl.lit(None, pl.String),
        __rclass=pl.lit(None, pl.String),
    )
    found.append(nearest(warn, _WARN, slack, before=warning_before))
    return found


def _decide(
    out: pl.LazyFrame, cols: list[str], codes: list[int], states_known: bool
) -> pl.LazyFrame:
    """Each attempt's failure domain, cause, culprit and evidence from its best evidence."""
    st = pl.col("state").cast(pl.String)
    kind = pl.col("__kind")
    ev_domain = pl.col("__domain")
    exit_code = pl.col("exit_code") if "exit_code" in cols else pl.lit(None, pl.Int32)
    app_requeue = exit_code.is_in(codes) if codes else pl.lit(False)
    unexplained_requeue = pl.lit("admin" if states_known else "unknown")
    domain = (
        pl.when(st.is_in(_NO_FAILURE))
        .then(pl.lit("none"))
        .when(st == "PREEMPTED")
        .then(pl.lit("preemption"))
        .when(st.is_in(["NODE_FAIL", "BOOT_FAIL"]))
        .then(pl.when(kind.is_not_null()).then(ev_domain).otherwise(pl.lit("hardware")))
        .when(st.is_in(["FAILED", "LAUNCH_FAILED"]))
        .then(
            pl.when(kind.is_in([_HEALTH, _FAULT, _DRAIN, _AFTERMATH, _WARN]))
            .then(ev_domain)
            .otherwise(pl.lit("user"))
        )
        .when(st == "REQUEUED")
        .then(
            pl.when(app_requeue.fill_null(False))
            .then(pl.lit("user"))
            .when(kind.is_not_null())
            .then(ev_domain)
            .otherwise(unexplained_requeue)
        )
        .otherwise(pl.lit("user"))
    )
    failing = pl.col("failure_domain").is_in(_FAILING)
    # a culprit only where a failing domain rests on evidence on that node
    on_node = failing & kind.is_not_null()
    # the domain rests on a node-state change (a fault, or an administrator's drain or DOWN)
    by_state = (on_node & kind.is_in([_FAULT, _DRAIN, _AFTERMATH])) | (
        (kind == _ADMIN) & (pl.col("failure_domain") == "admin")
    )
    accel = pl.col("n_accelerators") if "n_accelerators" in cols else pl.lit(None, pl.UInt32)
    return out.with_columns(failure_domain=domain).with_columns(
        failure_cause=pl.when(on_node)
        .then(pl.col("__cause"))
        .when(failing)
        .then(pl.lit("unknown")),
        culprit_node=pl.when(on_node).then(pl.col("__node")),
        evidence_reason=pl.when(by_state).then(pl.col("__reason")),
        reason_class=pl.when(by_state).then(pl.col("__rclass")),
        evidence=pl.when(pl.col("failure_domain") == "none")
        .then(pl.lit(None, pl.String))
        .when(on_node)
        .then(
            pl.when(kind.is_in([_HEALTH, _WARN]))
            .then(pl.lit("health_event"))
            .otherwise(pl.lit("node_state"))
        )
        .when((st == "REQUEUED") & (pl.col("failure_domain") == "user"))
        .then(pl.lit("exit_code"))
        .otherwise(pl.lit("job_state")),
        resource_class=pl.when(accel == 0)
        .then(pl.lit("cpu_only"))
        .when(accel > 0)
        .then(pl.lit("accelerator")),
    )


def attribute_failures(
    source: Dataset | pl.DataFrame | pl.LazyFrame,
    *,
    before_min: float = 10.0,
    after_min: float = 5.0,
    state_slack_s: float = 5.0,
    drain_slack_s: float = 120.0,
    warning_before_min: float = 3.0,
    requeue_exit_codes: Iterable[int] = (),
    health_events: pl.DataFrame | pl.LazyFrame | None = None,
    node_states: pl.DataFrame | pl.LazyFrame | None = None,
    reasons: ReasonRules | None = None,
    lazy: bool = False,
) -> pl.DataFrame | pl.LazyFrame:
    """Classify how every job attempt ended (rules and windows: see the module docstring).

    Parameters
    ----------
    source : Dataset or polars.DataFrame or polars.LazyFrame
        A Dataset (read lazily), or a jobs frame (then pass ``health_events`` / ``node_states``).
    before_min, after_min : float
        Health-event window around the attempt's end [minutes], never reaching before the attempt's
        start (Kokolis et al. HPCA'25 §III: 10 and 5); ``before_min`` also bounds node-state changes
        before the end.
    warning_before_min : float
        How long before a failing end a hardware *warning* on the node (Xid 63 row remapping,
        Xid 92 ECC error rate; not the application's own Xids 13, 31, 43) counts [min]: weaker
        evidence than any node-state change (default 3: on the independent generators, 5
        doubled the false hardware attributions for 0.3% more recall).
    drain_slack_s : float
        How long after the attempt's end a DRAIN (or a "Node unexpectedly rebooted") still counts
        [s]: Slurm's accounting records a drain when the node became DRAINED, once its jobs
        have ended (seen in run 1 of the real corpus), and a reboot when slurmd registers again,
        after the failure they explain. Default 120 s (a node that held only the failed job
        drains within seconds; on the independent generators 300 s added false hardware
        attributions and no recall).
    state_slack_s : float
        How long after the attempt's end a node-state change still counts [s] (the two records'
        clock granularity; Slurm stamps both to the second).
    requeue_exit_codes : iterable of int
        Exit codes the cluster's ``RequeueExit`` / ``RequeueExitHold`` name (``scontrol show
        config``; ``reliability collect`` reads them); a REQUEUED attempt that exited with one of
        them was requeued at the application's request (domain ``user``). Slurm's default is none.
    health_events, node_states : polars.DataFrame or polars.LazyFrame or None
        Evidence tables for a jobs frame. ``node_states=None`` means "no node-state history known":
        unexplained requeues are then ``unknown`` rather than ``admin``; pass an empty frame to say
        there were no node-state changes.
    reasons : ReasonRules or None
        How node-state reasons are classified (:mod:`reliability.reasons`); None: the built-in
        rules.
    lazy : bool
        Return the query as a LazyFrame instead of collecting it, so that an analysis on top of it
        can run on polars' streaming engine over data larger than memory.

    Returns
    -------
    polars.DataFrame or polars.LazyFrame
        The jobs frame with ``failure_domain``, ``failure_cause``, ``culprit_node``, ``evidence``,
        ``evidence_reason`` and ``reason_class`` (the node-state reason the domain rests on and
        its class, when it rests on one) and ``resource_class`` added (same rows, same order).
    """
    if min(before_min, after_min, state_slack_s, drain_slack_s, warning_before_min) < 0:
        raise ValueError(
            "before_min, after_min, state_slack_s and drain_slack_s must be >= 0 "
            f"(got {before_min}, {after_min}, {state_slack_s}, {drain_slack_s})"
        )
    codes = _exit_codes(requeue_exit_codes)
    jobs, he, ns, states_known = _frames(source, health_events, node_states)
    cols = jobs.collect_schema().names()
    jobs = jobs.with_row_index("__rid")
    before, after = timedelta(minutes=before_min), timedelta(minutes=after_min)
    slack = timedelta(seconds=state_slack_s)
    start = pl.col("start_time") if "start_time" in cols else pl.lit(None, pl.Datetime("us", "UTC"))
    ended = _ended_attempts(jobs, start)
    # every evidence kind joins these rows: build them once, not once per as-of join
    ended = ended.cache() if lazy else ended.collect().lazy()
    # attempt starts, for the records made after the fact (their node lists are joined to the
    # few starts near such a record: sorting every attempt's list held 4 GB at 5M attempts)
    starts = (
        jobs.select(pl.col("cluster").cast(pl.Categorical), "__rid", __s=start)
        .drop_nulls("__s")
        .sort("__s")
    )
    node_lists = jobs.select("__rid", __nodes=pl.col("nodes"))

    def lists_of(few: pl.LazyFrame) -> pl.LazyFrame:
        """``few`` with the node lists of its attempts (``__nodes``)."""
        if lazy:
            return few.join(node_lists, on="__rid")
        # read only these rows' lists (a filter the scan applies as it reads): a join would
        # hold every attempt's list (5M attempts: 2.4 GB)
        few = few.collect()
        wanted = few.get_column("__rid").unique().implode()
        return few.lazy().join(
            node_lists.filter(pl.col("__rid").is_in(wanted)).collect().lazy(), on="__rid"
        )

    if ns is not None:  # (only records made after the fact need them: node states)
        starts = starts.cache() if lazy else starts.collect().lazy()

    def nearest(
        events: pl.LazyFrame,
        kind: int,
        after: timedelta,
        attempts: pl.LazyFrame = ended,
        before: timedelta = before,
    ) -> pl.LazyFrame:
        return _nearest(events, kind, attempts, before, after)

    def latest_before(events: pl.LazyFrame, kind: int, lag: timedelta) -> pl.LazyFrame:
        return _latest_before(events, kind, lag, ended, starts, lists_of)

    evidence = [pl.LazyFrame(schema=_EVIDENCE_SCHEMA)]
    if he is not None:
        evidence += _health_evidence(
            he, ns, reasons, nearest, after, slack, timedelta(minutes=warning_before_min)
        )
    if ns is not None:
        evidence += _node_state_evidence(
            ns,
            reasons,
            nearest,
            latest_before,
            slack,
            timedelta(seconds=drain_slack_s),
            ended.filter(pl.col("__drain")),
        )
    # the best evidence per attempt: strongest kind first, then nearest the end, then by
    # node name, then a known cause before "unknown", then by what it says (deterministic on
    # ties: every column is a key)
    best = (
        pl.concat(evidence, how="vertical_relaxed")
        .sort(*_EVIDENCE_ORDER)
        .group_by("__rid", maintain_order=True)
        .first()
    )
    out = jobs.join(best, on="__rid", how="left", maintain_order="left")
    query = _decide(out, cols, codes, states_known).drop(*_EVIDENCE_SCHEMA)
    return query if lazy else query.collect()


def attribution_quality(attributed: pl.DataFrame, truth: pl.DataFrame) -> dict[str, float | None]:
    """Score the ``hardware``/``infrastructure`` label against a simulator's ground truth.

    Precision and recall, matched on job id and attempt.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`attribute_failures`): ``job_id``, ``attempt``,
        ``failure_domain``.
    truth : polars.DataFrame
        The simulator's ``truth/attempts.parquet``: ``job_id``, ``attempt``, ``hardware`` (True
        when the attempt truly ended in a hardware failure).

    Returns
    -------
    dict of str to float or None
        ``precision``, ``recall`` (None when undefined: nothing flagged / no true failures),
        ``true_positives``, ``false_positives``, ``false_negatives`` [attempts].
    """
    got = attributed.select(
        "job_id",
        pl.col("attempt").cast(pl.Int64),
        flagged=pl.col("failure_domain").is_in(["hardware", "infrastructure"]),
    )
    both = got.join(
        truth.select("job_id", pl.col("attempt").cast(pl.Int64), "hardware"),
        on=["job_id", "attempt"],
    )
    tp = both.filter(pl.col("flagged") & pl.col("hardware")).height
    fp = both.filter(pl.col("flagged") & ~pl.col("hardware")).height
    fn = both.filter(~pl.col("flagged") & pl.col("hardware")).height
    return {
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "true_positives": float(tp),
        "false_positives": float(fp),
        "false_negatives": float(fn),
    }


#: a node-state change this close to a whole multiple of 15 min from a NODE_FAIL [s] (clock
#: granularity and the time Slurm takes to mark a node DOWN)
_ZONE_TOLERANCE_S = 120
#: the largest difference of two UTC offsets [h]
_MAX_ZONE_SHIFT_H = 26


def zone_mismatch_note(
    attributed: pl.DataFrame, node_states: pl.DataFrame | pl.LazyFrame | None
) -> str | None:
    """Say when NODE_FAIL attempts find their node's failure a whole time-zone offset away.

    A NODE_FAIL with no node-state change near its end, while one exists on its node a multiple
    of 15 minutes away (at most 26 h), is the mark of the job records and the node states read
    in different time zones: every NODE_FAIL then loses its culprit and the observation window
    stretches. When most such attempts share one offset, this says so.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`attribute_failures`).
    node_states : polars.DataFrame or polars.LazyFrame or None
        The node-state intervals.

    Returns
    -------
    str or None
        The note (naming ``tz=``), or None when nothing points at a zone mismatch.
    """
    if node_states is None or attributed.height == 0:
        return None
    nf = attributed.filter(
        (pl.col("state").cast(pl.String) == "NODE_FAIL")
        & (pl.col("evidence") == "job_state")
        & pl.col("end_time").is_not_null()
    )
    if nf.height == 0:
        return None
    ns = node_states.lazy() if isinstance(node_states, pl.DataFrame) else node_states
    starts = (
        ns.filter(pl.col("state").cast(pl.String).is_in(("DOWN", "FAIL", "DRAIN", "REPAIR")))
        .select(pl.col("cluster").cast(pl.String), pl.col("node").cast(pl.String), "start")
        .collect()
    )
    if starts.height == 0:
        return None
    step_us = 15 * 60 * 1_000_000
    rows = (
        nf.with_row_index("_a")
        .select("_a", pl.col("cluster").cast(pl.String), "end_time", node=pl.col("nodes"))
        .explode("node")
    )
    d = (
        rows.join(starts, on=["cluster", "node"])
        .with_columns(_d=(pl.col("start") - pl.col("end_time")).dt.total_microseconds())
        .with_columns(_k=(pl.col("_d") / step_us).round().cast(pl.Int64))
        .filter(
            (pl.col("_k") != 0)
            & (pl.col("_d").abs() <= _MAX_ZONE_SHIFT_H * 3_600_000_000 + _ZONE_TOLERANCE_S * 1e6)
            & ((pl.col("_d") - pl.col("_k") * step_us).abs() <= _ZONE_TOLERANCE_S * 1_000_000)
        )
    )
    if d.height == 0:
        return None
    best = (
        d.group_by("_k").agg(n=pl.col("_a").n_unique()).sort(["n", "_k"], descending=[True, False])
    )
    k, n = best.row(0)
    if n * 2 <= nf.height or n < min(3, nf.height):
        return None
    h = k * 15 / 60
    when = f"{abs(h):g} h {'later' if h > 0 else 'earlier'}"
    return Hinted(
        f"{nf.height:,} NODE_FAIL attempts have no node-state change near their end, but {n:,} of them "
        f"find a DOWN/FAIL/DRAIN on their node exactly {when}: the job records and the node "
        "states were probably read in different time zones (each input's ",
        Hint("tz", action=False),
        ": sacct and sacctmgr print local time without a zone); until that is fixed these "
        "failures have no culprit node and the observation window is stretched",
    )
