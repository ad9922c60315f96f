"""Node-state reasons, classified: what a DOWN, DRAIN or FAIL says about the node.

When a node leaves service in the window of an attempt that failed, that is evidence the node
ended it, whatever the reason's wording, unless the reason is an administrator's: evidence
first, words second. Every reason falls in one class (:data:`REASON_CLASSES`), decided in
this order:

1. ``administrative``: maintenance, reboot requests, reservations, upgrades, reinstalls,
   benchmarks, burn-in (:data:`ADMIN_PATTERNS`), or a reason set by a named person rather
   than a system account (sacctmgr's ``User`` field, not one of :data:`SYSTEM_USERS`), unless
   it also says something failed (:data:`FAULT_PATTERNS`: failed, error, fault, bad,
   unhealthy, timeout, hang...; ``maintenance: bad DIMM`` is a fault). Even when it names a
   signal (``burn-in after GPU swap (was Xid 79)`` is the node's history). Not evidence: an
   administrator's drain does not end jobs.
2. ``signal``: it names a hardware signal, an Xid, SXid, ECC or NVLink error
   (:func:`reliability.taxonomy.reason_signals`). Evidence; the cause is the signal's
   component (a signal the taxonomy puts in the user's domain, such as Xid 13, is not
   evidence against the node).
3. ``slurm``: a reason Slurm sets itself (``Prolog error``, ``Kill task failed``, ``Node
   unexpectedly rebooted``: :data:`reliability.taxonomy.SLURM_NODE_REASONS`). Evidence, with
   the domain the taxonomy gives.
4. ``signal`` again: it names a component (``PSU``, ``DIMM``, ``InfiniBand``, ``GPU``...:
   :data:`COMPONENT_PATTERNS`). Evidence; the cause is that component.
5. ``unclassified``: anything else, an empty reason included (a site's own health-check
   wording, a vendor tool's message, free text): an unclassified node fault. Evidence, cause
   ``unknown``, counted in every hardware figure.

Operators extend every list without code (:class:`ReasonRules`: a pipeline's
``[attribution.reasons]``, ``reliability analyze --reasons FILE``). Patterns are Python regular
expressions matched case-insensitively anywhere in the reason.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from reliability.errors import ReliabilityError
from reliability.taxonomy import classify_slurm_reason, reason_signals

__all__ = [
    "ADMIN_PATTERNS",
    "COMPONENT_PATTERNS",
    "FAULT_PATTERNS",
    "REASON_CLASSES",
    "SYSTEM_USERS",
    "ReasonRules",
    "classify_reasons",
    "reason_table",
]

#: the classes of a node-state reason, and what each means
REASON_CLASSES: dict[str, str] = {
    "signal": "names a hardware signal or component: evidence, cause = that component",
    "slurm": "a reason Slurm sets itself (prolog, unkillable processes, reboot): evidence",
    "unclassified": "an unclassified node fault (a health check's own words, free text, no "
    "reason): evidence, cause unknown",
    "administrative": "maintenance, reboot request, reservation, upgrade, or set by a person: "
    "not evidence",
}
#: words that say something is administrative work, not a failure
ADMIN_PATTERNS: tuple[str, ...] = (
    r"\bmaint(enance)?\b", r"\breboot(ing)?\b", r"\breboot[_ ]?requested\b", r"\breserv",
    r"\bresv\b", r"\bupgrad", r"\bupdat(e|ing)\b", r"\bre-?install", r"\bre-?imag",
    r"\bprovision", r"\bdecommission", r"\bretir(e|ing)\b", r"\bpower[_ -]?(save|saving|down|off)\b",
    r"\bbenchmark", r"\bburn-?in\b", r"\bacceptance\b", r"\bplanned\b", r"\bscheduled\b",
    r"\badmin\b", r"\bcordon", r"\bdrain(ed|ing)? for\b", r"\bpatch(ing)?\b", r"\bmove[ds]?\b",
    r"\brack\b", r"\brecabl", r"\bdebug(ging)?\b", r"\btesting\b",
)  # fmt: skip
#: words that say something failed (they win over administrative words)
FAULT_PATTERNS: tuple[str, ...] = (
    r"\bfail", r"\berr(or|ors)?\b", r"\bfault", r"\bbad\b", r"\bdead\b", r"\bbroken\b",
    r"\bunhealthy\b", r"\bunrespons", r"\bnot respond", r"\btime[ds]? ?out\b", r"\btimed out\b",
    r"\bhang", r"\bhung\b", r"\bcrash", r"\bpanic", r"\blost\b", r"\bdegraded\b", r"\bcritical\b",
    r"\boverheat", r"\bthrottl", r"\bmissing\b", r"\bcorrupt", r"\bsel\b", r"\bmce\b",
    r"\bmachine check\b", r"\bunreachable\b", r"\bflap", r"\bsegfault",
    r"\b(fell|fallen|falling|dropped) off\b", r"\buncorrect", r"\bdbe\b",
)  # fmt: skip
#: component words in a reason -> taxonomy component (first match wins)
COMPONENT_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bpsu\b|\bpower supply\b|\bpower[_ ]?(fail|loss|redundan)", "psu"),
    (r"\bdimm\b|\bdram\b|\bmemory dimm\b|\bedac\b", "dimm"),
    (r"\binfiniband\b|\bib[ _-]?(port|link|card|hca)?\b|\bmlx\d|\bhca\b|\bopa\b", "ib_link"),
    (r"\bnic\b|\bethernet\b|\beth\d|\bnetwork (card|link|interface)\b", "nic"),
    (
        r"\bnvme\b|\bssd\b|\bdisk\b|\bdrive\b|\braid\b|/local\b|/scratch\b|\bfile ?system full\b",
        "disk",
    ),
    (r"\bbios\b|\bbmc\b|\bipmi\b|\bfirmware\b|\bsel\b", "bios"),
    (r"\bpcie?\b|\bpci[ -]?e\b", "pcie"),
    (r"\bcpus?\b|\bmce\b|\bmachine check\b", "cpu"),
    (r"\bnvlink\b|\bnvswitch\b|\bfabric ?manager\b", "nvlink"),
    (r"\bgpus?\b|\bnvidia\b|\bdcgm|\bcuda\b|\bhbm\b", "gpu"),
    (r"\bthermal\b|\boverheat|\bfan\b|\btemperature\b", "machine"),
)
#: accounts that set reasons on the system's behalf (health checks run as root, Slurm as its
#: SlurmUser); a reason set by anyone else was set by a person
SYSTEM_USERS: tuple[str, ...] = ("root", "slurm", "slurmd", "nhc", "")
#: taxonomy domain -> attribution failure domain
_DOMAIN = {"software": "system_software", "filesystem": "infrastructure"}
_COMPONENT_DOMAIN = {"filesystem": "infrastructure", "software": "system_software"}
_USER = re.compile(r"^\s*([^\s(]*)\s*(?:\((\d+)\))?\s*$")


@dataclass(frozen=True)
class ReasonRules:
    """The patterns that classify node-state reasons (see the module doc).

    Parameters
    ----------
    admin, fault : tuple of str
        Regular expressions of administrative and of failure wording.
    components : tuple of (str, str)
        ``(pattern, component)`` pairs, tried in order.
    system_users : tuple of str
        User names that set reasons on the system's behalf.
    """

    admin: tuple[str, ...] = ADMIN_PATTERNS
    fault: tuple[str, ...] = FAULT_PATTERNS
    components: tuple[tuple[str, str], ...] = COMPONENT_PATTERNS
    system_users: tuple[str, ...] = SYSTEM_USERS
    #: where the extensions came from, for messages
    source: str = field(default="built-in", compare=False)

    def extended(
        self,
        *,
        admin: list[str] | tuple[str, ...] = (),
        fault: list[str] | tuple[str, ...] = (),
        components: dict[str, list[str]] | None = None,
        system_users: list[str] | tuple[str, ...] = (),
        source: str = "",
    ) -> ReasonRules:
        """Return these rules with the operator's patterns added (theirs are tried first).

        Parameters
        ----------
        admin, fault : list of str
            More administrative / failure patterns.
        components : dict of str to list of str or None
            Component -> patterns (the component must be one of the taxonomy's).
        system_users : list of str
            More system accounts.
        source : str
            Where they come from (a file, a pipeline key), for error messages.

        Returns
        -------
        ReasonRules
            The extended rules.

        Raises
        ------
        ReliabilityError
            For a pattern that is not a regular expression, or an unknown component.
        """
        from reliability.schema import COMPONENTS

        where = source or "reason rules"
        for kind, pats in (("administrative", admin), ("fault", fault)):
            for p in pats:
                _compile(p, f"{where}: {kind} pattern")
        comps: list[tuple[str, str]] = []
        for comp, pats in (components or {}).items():
            if comp not in COMPONENTS:
                raise ReliabilityError(
                    f"{where}: unknown component {comp!r}; expected one of {', '.join(COMPONENTS)}"
                )
            for p in [pats] if isinstance(pats, str) else pats:
                _compile(p, f"{where}: component {comp} pattern")
                comps.append((p, comp))
        return replace(
            self,
            admin=(*admin, *self.admin),
            fault=(*fault, *self.fault),
            components=(*comps, *self.components),
            system_users=(*system_users, *self.system_users),
            source=source or self.source,
        )

    @classmethod
    def from_mapping(cls, table: dict[str, Any], source: str) -> ReasonRules:
        """Build rules from a table such as a pipeline's ``[attribution.reasons]``.

        Keys: ``administrative`` and ``fault`` (lists of patterns), ``components`` (a table of
        component = [patterns]), ``system_users`` (a list of names).

        Parameters
        ----------
        table : dict of str to object
            The table.
        source : str
            Where it comes from (``pipeline.toml: [attribution.reasons]``), for messages.

        Returns
        -------
        ReasonRules
            The built-in rules extended with the table's.

        Raises
        ------
        ReliabilityError
            Naming the key that is wrong.
        """
        allowed = {"administrative", "fault", "components", "system_users"}
        extra = sorted(set(table) - allowed)
        if extra:
            raise ReliabilityError(
                f"{source}.{extra[0]}: unknown key; allowed: {', '.join(sorted(allowed))}"
            )
        lists: dict[str, list[str]] = {}
        for key in ("administrative", "fault", "system_users"):
            v = table.get(key, [])
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ReliabilityError(f"{source}.{key}: expected a list of strings, got {v!r}")
            lists[key] = v
        comps = table.get("components", {})
        if not isinstance(comps, dict) or not all(
            isinstance(v, (str, list)) for v in comps.values()
        ):
            raise ReliabilityError(
                f"{source}.components: expected a table of component = [patterns], got {comps!r}"
            )
        return cls().extended(
            admin=lists["administrative"],
            fault=lists["fault"],
            components=comps,
            system_users=lists["system_users"],
            source=source,
        )

    @classmethod
    def from_file(cls, path: str | Path) -> ReasonRules:
        """Read rules from a TOML file (the keys of :meth:`from_mapping`, at its top level).

        Parameters
        ----------
        path : str or Path
            The file.

        Returns
        -------
        ReasonRules
            The built-in rules extended with the file's.
        """
        p = Path(path)
        try:
            table = tomllib.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ReliabilityError(f"{p}: cannot read ({exc.strerror or exc})") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ReliabilityError(f"{p}: not TOML ({exc})") from None
        return cls.from_mapping(table, str(p))

    @cached_property
    def _compiled(
        self,
    ) -> tuple[re.Pattern[str], re.Pattern[str], list[tuple[re.Pattern[str], str]]]:
        admin = re.compile("|".join(f"(?:{p})" for p in self.admin) or "(?!)", re.IGNORECASE)
        fault = re.compile("|".join(f"(?:{p})" for p in self.fault) or "(?!)", re.IGNORECASE)
        comps = [(re.compile(p, re.IGNORECASE), c) for p, c in self.components]
        return admin, fault, comps

    def classify(self, reason: str | None, user: str | None = None) -> dict[str, str | None]:
        """Classify one reason (see the module doc).

        Parameters
        ----------
        reason : str or None
            The node-state reason.
        user : str or None
            Who set it, as sacctmgr prints it (``root(0)``, ``jsmith(1203)``), if known.

        Returns
        -------
        dict of str to str or None
            ``reason_class``, ``component`` (null when unknown), ``domain`` (the attribution
            failure domain the evidence gives; null for administrative), ``signal`` (a label such
            as ``Xid 79``, or the matched wording).
        """
        admin, fault, comps = self._compiled
        text = reason or ""
        failing = fault.search(text) is not None
        if not failing and (admin.search(text) or self._by_a_person(user)):
            # an administrator's words, even naming a signal ("burn-in after GPU swap (was Xid
            # 79)"): the history of the node, not a fault now
            return _row("administrative", None, None, None)
        sig = reason_signals(text)
        if sig:
            hw = [s for s in sig if s.classification.domain == "hardware"]
            s = (hw or sig)[0]
            label = f"Xid {s.code}" if s.code.isdigit() else s.code
            dom = s.classification.domain
            return _row("signal", s.classification.component, _DOMAIN.get(dom, dom), label)
        c = classify_slurm_reason(text)
        if c is not None:
            return _row("slurm", c.component, _DOMAIN.get(c.domain, c.domain), c.description)
        for pat, comp in comps:
            m = pat.search(text)
            if m:
                return _row("signal", comp, _COMPONENT_DOMAIN.get(comp, "hardware"), m.group(0))
        return _row("unclassified", "unknown", "hardware", None)

    def _by_a_person(self, user: str | None) -> bool:
        if not user:
            return False
        m = _USER.match(user)
        name = (m.group(1) if m else user).strip().lower()
        return bool(name) and name not in {u.lower() for u in self.system_users}


def _row(
    cls: str, component: str | None, domain: str | None, signal: str | None
) -> dict[str, str | None]:
    return {"reason_class": cls, "component": component, "domain": domain, "signal": signal}


def _compile(pattern: object, what: str) -> None:
    if not isinstance(pattern, str):
        raise ReliabilityError(f"{what}: expected a string, got {pattern!r}")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ReliabilityError(f"{what} {pattern!r} is not a regular expression ({exc})") from None


_SCHEMA = {
    "reason": pl.String,
    "user": pl.String,
    "reason_class": pl.String,
    "component": pl.String,
    "domain": pl.String,
    "signal": pl.String,
}


def classify_reasons(
    frame: pl.DataFrame, rules: ReasonRules | None = None, *, user: bool = True
) -> pl.DataFrame:
    """Classify the distinct (reason, user) pairs of a node-state frame.

    Parameters
    ----------
    frame : polars.DataFrame
        Has ``reason`` (and ``user`` when ``user`` is True).
    rules : ReasonRules or None
        The rules (None: the built-in ones).
    user : bool
        Use the ``user`` column (who set the reason).

    Returns
    -------
    polars.DataFrame
        One row per distinct pair: ``reason, user, reason_class, component, domain, signal``.
    """
    rules = rules or ReasonRules()
    cols = ["reason", "user"] if user and "user" in frame.columns else ["reason"]
    pairs = frame.select([pl.col(c).cast(pl.String) for c in cols]).unique()
    rows = []
    for r in pairs.iter_rows(named=True):
        u = r.get("user")
        rows.append({"reason": r["reason"], "user": u, **rules.classify(r["reason"], u)})
    return pl.DataFrame(rows, schema=_SCHEMA)


def reason_table(
    attributed: pl.DataFrame,
    node_states: pl.DataFrame | pl.LazyFrame,
    rules: ReasonRules | None = None,
) -> pl.DataFrame:
    """List every reason a node left service with, its class, and the attempts it explains.

    Parameters
    ----------
    attributed : polars.DataFrame
        Attributed attempts (:func:`reliability.attribute_failures`, with ``evidence_reason``).
    node_states : polars.DataFrame or polars.LazyFrame
        The node-state intervals.
    rules : ReasonRules or None
        The rules attribution used (None: the built-in ones).

    Returns
    -------
    polars.DataFrame
        One row per distinct reason of a DOWN, DRAIN, FAIL or REPAIR interval: ``reason``,
        ``reason_class``, ``component``, ``intervals``, ``nodes``, ``attempts_explained`` (failed
        attempts whose failure domain rests on an interval with this reason), ``hardware``
        (of those, attributed to hardware or infrastructure); most attempts explained first.
    """
    ns = node_states.lazy() if isinstance(node_states, pl.DataFrame) else node_states
    names = ns.collect_schema().names()
    states = (
        ns.filter(pl.col("state").cast(pl.String).is_in(("DOWN", "DRAIN", "FAIL", "REPAIR")))
        .select(
            pl.col("node").cast(pl.String),
            reason=pl.col("reason").cast(pl.String)
            if "reason" in names
            else pl.lit(None, pl.String),
            user=pl.col("user").cast(pl.String) if "user" in names else pl.lit(None, pl.String),
        )
        .collect()
    )
    schema = {
        "reason": pl.String,
        "reason_class": pl.String,
        "component": pl.String,
        "intervals": pl.Int64,
        "nodes": pl.Int64,
        "attempts_explained": pl.Int64,
        "hardware": pl.Int64,
    }
    if states.height == 0:
        return pl.DataFrame(schema=schema)
    classes = classify_reasons(states, rules)
    # a reason set by several users may fall in several classes: the most common one
    per = (
        states.join(classes, on=["reason", "user"], how="left", nulls_equal=True)
        .group_by("reason", "reason_class", "component")
        .agg(intervals=pl.len(), nodes=pl.col("node").n_unique())
        .sort("intervals", descending=True)
        .unique("reason", keep="first", maintain_order=True)
    )
    if "evidence_reason" in attributed.columns:
        ex = (
            attributed.filter(
                pl.col("evidence_reason").is_not_null() | pl.col("reason_class").is_not_null()
            )
            .group_by(reason=pl.col("evidence_reason"))
            .agg(
                attempts_explained=pl.len(),
                hardware=pl.col("failure_domain").is_in(["hardware", "infrastructure"]).sum(),
            )
        )
    else:
        ex = pl.DataFrame(
            schema={"reason": pl.String, "attempts_explained": pl.UInt32, "hardware": pl.UInt32}
        )
    out = (
        per.join(ex, on="reason", how="left", nulls_equal=True)
        .with_columns(pl.col("attempts_explained", "hardware").fill_null(0))
        .sort(
            ["attempts_explained", "intervals", "reason"],
            descending=[True, True, False],
            nulls_last=True,
        )
    )
    return out.select(list(schema)).cast(schema)  # type: ignore[arg-type]
