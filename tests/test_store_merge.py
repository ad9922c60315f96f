"""Merging overlapping inputs by data, not by ingest order; node-state reconciliation across
sources (scontrol / sinfo -R snapshots vs the sacctmgr event history)."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from reliability import Dataset
from reliability.store import NODE_STATE_TOLERANCE

HEADER = "JobID|JobName|State|ExitCode|Submit|Start|End|NNodes|AllocTRES|NodeList|Cluster"
EVENTS = "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User"
TABLES = ("jobs", "job_steps", "health_events", "node_states", "quarantine")
RUN1_FILES = (  # (kind, file, options) of each snapshot of run 1
    ("slurm", "sacct_broad_duplicates.psv", {"tz": "UTC"}),
    ("events", "sacctmgr_event.psv", {"tz": "UTC"}),
    ("nodes", "scontrol_show_node.txt", {"tz": "UTC", "cluster": "testclu"}),
    ("nodes", "sinfo_R.txt", {"tz": "UTC", "cluster": "testclu"}),
)


def _write(path, header, rows):
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def _stable(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows in a canonical order (list columns joined for sorting)."""
    lists = [c for c, t in frame.schema.items() if isinstance(t, pl.List)]
    keys = frame.with_columns(
        pl.col(c).cast(pl.List(pl.String)).list.join("\x1f").alias(f"__{c}") for c in lists
    )
    order = [c for c in keys.columns if c not in lists]
    return keys.sort(order, nulls_last=True).drop([f"__{c}" for c in lists])


def _tables(ds: Dataset) -> dict[str, pl.DataFrame]:
    return {t: _stable(ds.table(t)) for t in TABLES}


@pytest.fixture(scope="module")
def run1_orders(shared, tmp_path_factory):
    """Run 1's final and in-flight snapshots ingested in both orders (one ingest per file)."""
    root = shared / "slurm-real-run1"
    out = {}
    for name, order in (("final_first", ("final_snapshot", "inflight_snapshot")),
                        ("inflight_first", ("inflight_snapshot", "final_snapshot"))):  # fmt: skip
        ds = Dataset(tmp_path_factory.mktemp(name) / "ds")
        for snap in order:
            for kind, f, kw in RUN1_FILES:
                ds.ingest(kind, root / snap / f, **kw)
        out[name] = ds
    final = Dataset(tmp_path_factory.mktemp("final_only") / "ds")
    final.ingest("slurm", root / "final_snapshot" / "sacct_broad_duplicates.psv", tz="UTC")
    out["final_only"] = final
    return root, out


def test_both_orders_of_the_run1_snapshots_give_identical_tables(run1_orders):
    _, ds = run1_orders
    a, b = _tables(ds["final_first"]), _tables(ds["inflight_first"])
    for t in TABLES:
        assert_frame_equal(a[t], b[t], check_row_order=True), t
    assert ds["final_first"].observation_window() == ds["inflight_first"].observation_window()


def test_merged_jobs_equal_the_final_export_alone(run1_orders):
    """The final snapshot saw every attempt end: merging the in-flight one into it (in either
    order) must change nothing: no RUNNING / PENDING / SUSPENDED copy survives."""
    _, ds = run1_orders
    for name in ("final_first", "inflight_first"):
        for t in ("jobs", "job_steps"):
            assert_frame_equal(_stable(ds[name].table(t)), _stable(ds["final_only"].table(t)))
        states = set(ds[name].jobs["state"].cast(pl.String))
        assert not states & {"RUNNING", "PENDING", "SUSPENDED"}


def _history(path) -> list[tuple]:
    """sacctmgr show event by a plain parse: Cluster|NodeName|TimeStart|TimeEnd|State|...|User
    (a '|' inside the reason adds fields, so the reason is everything between State and User)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        f = line.split("|")
        if not f[1]:
            continue
        state = re.sub(r"[*~#!%$@^]", "", f[4])
        end = None if f[3] == "Unknown" else datetime.fromisoformat(f[3]).replace(tzinfo=UTC)
        out.append((f[1], state, datetime.fromisoformat(f[2]).replace(tzinfo=UTC), end,
                    "|".join(f[5:-1]), re.sub(r"\(\d+\)$", "", f[-1])))  # fmt: skip
    return out


def _reason_times(path) -> dict[str, tuple[datetime, str]]:
    """node -> (time, user) of the Reason=... [user@time] of each node in scontrol show node."""
    text = path.read_text(encoding="utf-8")
    out = {}
    for rec in re.split(r"(?=NodeName=)", text):
        m = re.search(r"Reason=.*\[(\w+)@([\d\-T:]+)\]", rec)
        if m:
            node = re.match(r"NodeName=(\S+)", rec).group(1)
            out[node] = (datetime.fromisoformat(m.group(2)).replace(tzinfo=UTC), m.group(1))
    return out


def test_run1_node_states_are_the_history_with_snapshot_reason_times(run1_orders):
    """Expected, from the raw files: every interval of the final sacctmgr history, once; a
    drain that scontrol stamps earlier (the time its reason was set, before the node became
    DRAINED) starts then, by the user scontrol names; the in-flight snapshot's DOWN node03
    (and sinfo -R's guess of DRAIN for it) is the history's closed interval."""
    root, ds = run1_orders
    expect = {
        (n, s, t0): (t1, r, u)
        for n, s, t0, t1, r, u in _history(root / "final_snapshot" / "sacctmgr_event.psv")
    }
    for snap in ("final_snapshot", "inflight_snapshot"):
        for node, (t, user) in _reason_times(root / snap / "scontrol_show_node.txt").items():
            match = [k for k in expect if k[0] == node and abs(k[2] - t) <= NODE_STATE_TOLERANCE]
            assert len(match) == 1, node
            (n, s, t0), (t1, r, u) = match[0], expect.pop(match[0])
            expect[(n, s, min(t0, t))] = (t1, r, user if t < t0 else u)
    got = ds["final_first"].node_states
    assert sorted(
        got.select("node", pl.col("state").cast(pl.String), "start", "end", "reason", "user").rows()
    ) == sorted((n, s, t0, t1, r, u) for (n, s, t0), (t1, r, u) in expect.items())
    node08 = got.filter(pl.col("node") == "node08").row(0, named=True)
    assert node08["start"] < datetime(2026, 11, 30, 1, 21, 54, tzinfo=UTC)  # the event's time
    assert node08["reason"] == "GPU ECC errors <xid 79> on gpu:1"  # not sinfo's truncated one


# -- the rules, on generated inputs ---------------------------------------------------------
def _job(jid, state, submit, start, end, node="n1"):
    t = lambda x: x or "Unknown"  # noqa: E731
    return f"{jid}|j{jid}|{state}|0:0|{submit}|{t(start)}|{t(end)}|1||{node}|c"


def _ingest_orders(tmp_path, files, kind="slurm", **kw):
    """The Dataset built from ``files`` in every order: {order: tables}."""
    out = {}
    for n, perm in enumerate(itertools.permutations(files)):
        ds = Dataset(tmp_path / f"ds{n}")
        for f in perm:
            ds.ingest(kind if isinstance(kind, str) else kind[f.name], f, **kw)
        out[tuple(p.name for p in perm)] = ds
    return out


def test_finished_beats_unfinished_and_later_end_beats_earlier_in_any_order(tmp_path):
    t0 = "2025-01-01T00:00:00"
    a = _write(tmp_path / "a.psv", HEADER, [
        _job(1, "RUNNING", t0, "2025-01-01T00:01:00", None),
        _job(2, "COMPLETED", t0, "2025-01-01T00:01:00", "2025-01-01T01:00:00"),
        _job(3, "PENDING", t0, None, None),
        _job(4, "SUSPENDED", t0, "2025-01-01T00:01:00", None),
    ])  # fmt: skip
    b = _write(tmp_path / "b.psv", HEADER, [
        _job(1, "COMPLETED", t0, "2025-01-01T00:01:00", "2025-01-01T02:00:00"),
        _job(2, "CANCELLED", t0, "2025-01-01T00:01:00", "2025-01-01T03:00:00"),
        _job(3, "FAILED", t0, "2025-01-01T00:05:00", "2025-01-01T00:06:00"),
        _job(4, "RUNNING", t0, "2025-01-01T00:01:00", None),
    ])  # fmt: skip
    orders = _ingest_orders(tmp_path, [a, b], tz="UTC")
    expect = [("1", 0, "COMPLETED"), ("2", 0, "CANCELLED"), ("3", 0, "FAILED")]
    for order, ds in orders.items():
        got = ds.jobs.sort("job_id").select("job_id", "attempt", pl.col("state").cast(pl.String))
        assert got.rows()[:3] == expect, order
        # job 4: unfinished in both, no end: a tie, so the input ingested later wins
        assert got.rows()[3] == ("4", 0, "RUNNING" if order[-1] == "b.psv" else "SUSPENDED")


def test_attempts_are_renumbered_by_start_across_inputs(tmp_path):
    first = _write(tmp_path / "jan.psv", HEADER, [
        _job(7, "NODE_FAIL", "2025-01-01T00:00:00", "2025-01-01T00:01:00", "2025-01-01T02:00:00"),
        _job(8, "RUNNING", "2025-01-01T00:00:00", "2025-01-01T00:01:00", None, "n2"),
    ])  # fmt: skip
    second = _write(tmp_path / "feb.psv", HEADER, [
        _job(8, "COMPLETED", "2025-01-01T00:00:00", "2025-01-01T00:01:00", "2025-01-01T05:00:00", "n2"),
        _job(7, "COMPLETED", "2025-01-01T02:05:00", "2025-01-01T02:10:00", "2025-01-01T09:00:00", "n3"),
        _job(7, "PENDING", "2025-01-01T09:05:00", None, None, "n3"),
    ])  # fmt: skip
    for ds in _ingest_orders(tmp_path, [first, second], tz="UTC").values():
        jobs = ds.jobs.sort("job_id", "attempt")
        assert jobs.select("job_id", "attempt", pl.col("state").cast(pl.String)).rows() == [
            ("7", 0, "NODE_FAIL"), ("7", 1, "COMPLETED"), ("7", 2, "PENDING"), ("8", 0, "COMPLETED"),
        ]  # fmt: skip


def _random_exports(tmp_path, seed, n_jobs=40, n_files=3):
    """Exports of one cluster taken at different times: each sees every job submitted by
    then, in the state it had then (finished ones with their end)."""
    rng = np.random.default_rng(seed)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    fmt = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S")  # noqa: E731
    submit = [t0 + timedelta(minutes=int(m)) for m in np.sort(rng.integers(0, 600, n_jobs))]
    wait = rng.integers(0, 60, n_jobs)
    run = rng.integers(1, 300, n_jobs)
    final = rng.choice(["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED"], n_jobs)
    cuts = sorted(rng.integers(100, 1000, n_files))
    files = []
    for k, cut in enumerate(cuts):
        now = t0 + timedelta(minutes=int(cut))
        rows = []
        for j in range(n_jobs):
            s, st = submit[j], submit[j] + timedelta(minutes=int(wait[j]))
            en = st + timedelta(minutes=int(run[j]))
            if s > now:
                continue
            if st > now:
                rows.append(_job(j, "PENDING", fmt(s), None, None))
            elif en > now:
                rows.append(_job(j, "RUNNING", fmt(s), fmt(st), None))
            else:
                rows.append(_job(j, final[j], fmt(s), fmt(st), fmt(en)))
        files.append(_write(tmp_path / f"export{k}.psv", HEADER, rows))
    return files


@pytest.mark.parametrize("seed", range(6))
def test_any_order_of_overlapping_exports_gives_the_latest_view(tmp_path, seed):
    """Generated exports with known truth: whatever the ingest order, every job appears once,
    in the state of the latest export that saw it (the independent oracle: that export)."""
    files = _random_exports(tmp_path, seed)
    latest = Dataset(tmp_path / "latest")
    latest.ingest("slurm", files[-1], tz="UTC")
    want = _stable(latest.jobs)
    for ds in _ingest_orders(tmp_path, files, tz="UTC").values():
        assert_frame_equal(_stable(ds.jobs), want)


@pytest.mark.parametrize("seed", range(6))
def test_exports_concatenated_into_one_file_give_the_latest_view(tmp_path, seed):
    """The same exports concatenated into one file (``cat``, in any order, with or without
    their headers repeated): the reader keeps one record per attempt by the Dataset's rules,
    so the jobs are those of the latest export (the oracle); every other record is
    quarantined as a repeat or as the same attempt seen in another state."""
    files = _random_exports(tmp_path, seed)
    latest = Dataset(tmp_path / "latest")
    latest.ingest("slurm", files[-1], tz="UTC")
    want = _stable(latest.jobs)
    bodies = [f.read_text(encoding="utf-8").splitlines()[1:] for f in files]
    for n, perm in enumerate(itertools.permutations(range(len(files)))):
        for headers in (False, True):
            lines = [HEADER]
            for k in perm:
                lines += ([HEADER] if headers and lines != [HEADER] else []) + bodies[k]
            one = _write(tmp_path / f"cat{n}{int(headers)}.psv", lines[0], lines[1:])
            ds = Dataset(tmp_path / f"one{n}{int(headers)}")
            ds.ingest("slurm", one, tz="UTC")
            assert_frame_equal(_stable(ds.jobs), want)
            q = ds.quarantine
            assert ds.jobs.height + q.height == sum(len(b) for b in bodies)
            assert (
                q.get_column("reason")
                .str.contains("exact duplicate|same attempt|never-started")
                .all()
            )


def test_one_file_keeps_real_requeues_and_drops_the_inflight_copies(tmp_path):
    """Job 7 was requeued (a new Submit): two attempts, kept. The in-flight copies of its
    second attempt (PENDING, then RUNNING) and of job 8's step are the same records seen
    earlier: dropped, whichever comes first in the file."""
    final = [
        _job(7, "NODE_FAIL", "2025-01-01T00:00:00", "2025-01-01T00:01:00", "2025-01-01T02:00:00"),
        _job(7, "COMPLETED", "2025-01-01T02:05:00", "2025-01-01T02:10:00", "2025-01-01T09:00:00"),
        _job(8, "COMPLETED", "2025-01-01T00:00:00", "2025-01-01T00:01:00", "2025-01-01T05:00:00"),
        "8.batch|batch|COMPLETED|0:0|2025-01-01T00:01:00|2025-01-01T00:01:00|2025-01-01T05:00:00|1||n1|c",
    ]
    inflight = [
        _job(7, "NODE_FAIL", "2025-01-01T00:00:00", "2025-01-01T00:01:00", "2025-01-01T02:00:00"),
        _job(7, "PENDING", "2025-01-01T02:05:00", None, None),
        _job(8, "RUNNING", "2025-01-01T00:00:00", "2025-01-01T00:01:00", None),
        "8.batch|batch|RUNNING|0:0|2025-01-01T00:01:00|2025-01-01T00:01:00|Unknown|1||n1|c",
    ]
    later = [_job(7, "RUNNING", "2025-01-01T02:05:00", "2025-01-01T02:10:00", None)]
    for n, rows in enumerate((inflight + later + final, final + later + inflight,
                              later + final + inflight)):  # fmt: skip
        f = _write(tmp_path / f"one{n}.psv", HEADER, rows)
        ds = Dataset(tmp_path / f"ds{n}")
        ds.ingest("slurm", f, tz="UTC")
        jobs = ds.jobs.sort("job_id", "attempt")
        assert jobs.select("job_id", "attempt", pl.col("state").cast(pl.String)).rows() == [
            ("7", 0, "NODE_FAIL"), ("7", 1, "COMPLETED"), ("8", 0, "COMPLETED"),
        ]  # fmt: skip
        steps = ds.job_steps.select("job_id", "step", pl.col("state").cast(pl.String))
        assert steps.rows() == [("8", "batch", "COMPLETED")]
        assert ds.quarantine.height == len(rows) - 4


def _events(path, rows):
    return _write(path, EVENTS, rows)


def test_run1_inflight_node_states_are_one_interval_in_any_ingest_order(shared, tmp_path):
    """Run 1's in-flight view of node03's PSU failure: the sacctmgr event (DOWN, full reason),
    scontrol's DOWN with the same start, and sinfo -R's reason cut to 20 characters (read as
    DRAIN) are one interval, whatever order the three are ingested in (scontrol's row used to
    win the tie when ingested after the events, leaving sinfo's row unmatched: 2 rows)."""
    root = shared / "slurm-real-run1" / "inflight_snapshot"
    files = {"events": ("events", root / "sacctmgr_event.psv", {"tz": "UTC"}),
             "scontrol": ("nodes", root / "scontrol_show_node.txt", {"tz": "UTC", "cluster": "testclu"}),
             "sinfo": ("nodes", root / "sinfo_R.txt", {"tz": "UTC", "cluster": "testclu"})}  # fmt: skip
    seen = set()
    for n, order in enumerate(itertools.permutations(files)):
        ds = Dataset(tmp_path / f"ds{n}")
        for name in order:
            kind, path, kw = files[name]
            ds.ingest(kind, path, **kw)
        node03 = ds.node_states.filter(pl.col("node") == "node03")
        assert node03.select("state", "reason").rows() == [
            ("DOWN", "PSU failure (test) - see ticket #4711")
        ], order
        seen.add(_stable(ds.node_states).write_csv())
    assert len(seen) == 1  # the whole table is the same in every order


@pytest.mark.parametrize("snapshot", ["inflight_snapshot", "final_snapshot"])
def test_scontrol_and_sinfo_alone_are_one_view(shared, tmp_path, snapshot):
    """Without the sacctmgr history, scontrol's and sinfo -R's snapshots of one moment (sinfo
    cuts reasons at 20 characters and prints no state) are the scontrol view alone, in either
    order: run 1's in-flight node03 was DOWN and DRAIN."""
    root = shared / "slurm-real-run1" / snapshot
    kw = {"tz": "UTC", "cluster": "testclu"}
    scontrol, sinfo = root / "scontrol_show_node.txt", root / "sinfo_R.txt"
    alone = Dataset(tmp_path / "alone")
    alone.ingest("nodes", scontrol, **kw)
    want = _stable(alone.node_states)
    for n, order in enumerate(((scontrol, sinfo), (sinfo, scontrol))):
        ds = Dataset(tmp_path / f"ds{n}")
        for path in order:
            ds.ingest("nodes", path, **kw)
        assert_frame_equal(_stable(ds.node_states), want)


def test_closed_interval_beats_an_open_one_with_the_same_start(tmp_path):
    inflight = _events(
        tmp_path / "inflight.psv", ["c|n1|2025-01-01T00:00:00|Unknown|DOWN|psu|root(0)"]
    )
    final = _events(
        tmp_path / "final.psv", ["c|n1|2025-01-01T00:00:00|2025-01-01T05:00:00|DOWN|psu|root(0)"]
    )
    for ds in _ingest_orders(tmp_path, [inflight, final], kind="events", tz="UTC").values():
        assert ds.node_states.select("node", "end").rows() == [
            ("n1", datetime(2025, 1, 1, 5, tzinfo=UTC))
        ]


def _scontrol(path, node, state, reason, user, when):
    path.write_text(
        f"NodeName={node} Arch=x86_64 CoresPerSocket=4\n   State={state} ThreadsPerCore=1\n"
        f"   Reason={reason} [{user}@{when}]\n",
        encoding="utf-8",
    )
    return path


def test_a_snapshot_and_the_history_of_one_drain_are_one_interval(tmp_path):
    hist = _events(tmp_path / "events.psv", [
        "c|n1|2025-01-01T00:01:00|2025-01-01T04:00:00|DRAIN|GPU ECC errors <xid 79> on gpu:1|slurm(64030)",
        "c|n2|2025-01-01T00:00:00|Unknown|DRAIN|bad DIMM|root(0)",
    ])  # fmt: skip
    snap1 = _scontrol(tmp_path / "n1.txt", "n1", "IDLE+DRAIN", "GPU ECC errors <xid 79> on gpu:1",
                      "root", "2025-01-01T00:00:03")  # fmt: skip
    # the same node drained again a day later: beyond the tolerance, another interval
    snap2 = _scontrol(
        tmp_path / "n1b.txt", "n1", "IDLE+DRAIN", "fan", "root", "2025-01-02T00:00:00"
    )
    # n2: DOWN in the snapshot, DRAIN in the history: another state, another reason: apart
    snap3 = _scontrol(
        tmp_path / "n2.txt", "n2", "DOWN", "not responding", "slurm", "2025-01-01T00:05:00"
    )
    kinds = {"events.psv": "events", "n1.txt": "nodes", "n1b.txt": "nodes", "n2.txt": "nodes"}
    for ds in _ingest_orders(
        tmp_path, [hist, snap1, snap2, snap3], kind=kinds, tz="UTC", cluster="c"
    ).values():
        got = ds.node_states.sort("node", "start").select(
            "node", pl.col("state").cast(pl.String), "start", "end", "reason", "user").rows()  # fmt: skip
        assert got == [
            ("n1", "DRAIN", datetime(2025, 1, 1, 0, 0, 3, tzinfo=UTC), datetime(2025, 1, 1, 4, tzinfo=UTC),
             "GPU ECC errors <xid 79> on gpu:1", "root"),
            ("n1", "DRAIN", datetime(2025, 1, 2, tzinfo=UTC), None, "fan", "root"),
            ("n2", "DRAIN", datetime(2025, 1, 1, tzinfo=UTC), None, "bad DIMM", "root"),
            ("n2", "DOWN", datetime(2025, 1, 1, 0, 5, tzinfo=UTC), None, "not responding", "slurm"),
        ]  # fmt: skip


def test_sinfo_r_truncated_reason_without_state_joins_the_history(tmp_path):
    hist = _events(
        tmp_path / "events.psv",
        [
            "c|n3|2025-01-01T00:00:00|2025-01-01T01:00:00|DOWN|PSU failure (test) - see ticket #4711|root(0)"
        ],
    )
    sinfo = tmp_path / "sinfo.txt"
    sinfo.write_text("REASON               USER      TIMESTAMP           NODELIST\n"
                     "PSU failure (test) - root      2025-01-01T00:00:00 n3\n", encoding="utf-8")  # fmt: skip
    kinds = {"events.psv": "events", "sinfo.txt": "nodes"}
    for ds in _ingest_orders(tmp_path, [hist, sinfo], kind=kinds, tz="UTC", cluster="c").values():
        assert ds.node_states.select("node", pl.col("state").cast(pl.String), "end").rows() == [
            ("n3", "DOWN", datetime(2025, 1, 1, 1, tzinfo=UTC))
        ]


def test_a_reason_seen_by_several_views_is_one_health_event():
    """Health events read from node-state reasons (source slurm): the same drain seen by a
    snapshot (sinfo -R cuts the reason), another snapshot and the history is one event; the
    same message from one input twice, or from another node, stays."""
    from reliability import schema
    from reliability.store.merge import INPUT, reconcile_reason_events

    t = datetime(2025, 1, 1, tzinfo=UTC)
    full = "Slurm DRAIN reason: GPU ECC errors <xid 79> on gpu:1"
    rows = [  # (input, node, time offset [s], code, device, message, source)
        (0, "n8", 0, "ecc", None, full[:39], "slurm"),  # sinfo -R: cut
        (1, "n8", 0, "79", "gpu:1", full, "slurm"),  # scontrol
        (2, "n8", 57, "79", "gpu:1", full, "slurm"),  # sacctmgr event, 57 s later
        (2, "n8", 3 * 86400, "79", "gpu:1", full, "slurm"),  # the next drain, days later
        (3, "n8", 30, "79", "gpu:1", full, "kernel_log"),  # another source: not touched
        (1, "n9", 0, "79", "gpu:1", full, "slurm"),  # another node
        (2, "n9", 60, "79", "gpu:1", full, "slurm"),
    ]
    frame = pl.DataFrame(
        {"cluster": "c", "node": [r[1] for r in rows],
         "time": [t + timedelta(seconds=r[2]) for r in rows],
         "source": pl.Series([r[6] for r in rows]).cast(schema.HealthSource),
         "component": pl.Series(["gpu_memory"] * len(rows)).cast(schema.Component),
         "code": [r[3] for r in rows], "severity": pl.Series(["critical"] * len(rows)).cast(schema.Severity),
         "device": [r[4] for r in rows], "message": [r[5] for r in rows],
         INPUT: pl.Series([r[0] for r in rows], dtype=pl.UInt32)},
    )  # fmt: skip
    out = reconcile_reason_events(frame.lazy(), inputs=[0, 1, 2]).collect()
    got = sorted(out.select("node", "time", "source", "code", "device").rows(), key=str)
    assert got == sorted([
        ("n8", t, "slurm", "79", "gpu:1"),
        ("n8", t + timedelta(days=3), "slurm", "79", "gpu:1"),
        ("n8", t + timedelta(seconds=30), "kernel_log", "79", "gpu:1"),
        ("n9", t, "slurm", "79", "gpu:1"),
    ], key=str)  # fmt: skip


def test_run1_views_of_a_drain_give_no_more_reason_events_than_intervals(run1_orders):
    _, ds = run1_orders
    d = ds["final_first"]
    events = d.health_events.filter(pl.col("source") == "slurm").group_by("node").len()
    intervals = dict(d.node_states.group_by("node").len().iter_rows())
    for node, n in events.iter_rows():
        assert n <= intervals.get(node, 0), node


def test_run1_final_and_inflight_in_one_file_read_as_the_final_export(shared, tmp_path):
    """Run 1's real exports concatenated into one file (either order): the jobs and steps of
    the final export alone (126 attempts, not 130), and the resize note names the records
    kept (it named a repeat before the repeats were set aside)."""
    from reliability.ingest import read_sacct

    root = shared / "slurm-real-run1"
    final = root / "final_snapshot" / "sacct_broad_duplicates.psv"
    inflight = root / "inflight_snapshot" / "sacct_broad_duplicates.psv"
    alone = read_sacct(final, tz="UTC")
    texts = [p.read_text(encoding="utf-8").splitlines() for p in (final, inflight)]
    for first, second in (texts, texts[::-1]):
        one = tmp_path / "one.psv"
        one.write_text("\n".join(first + second[1:]) + "\n", encoding="utf-8")
        r = read_sacct(one, tz="UTC")
        assert r.rows_read == r.rows_kept + r.rows_quarantined
        for t in ("jobs", "job_steps"):
            assert_frame_equal(_stable(r.frames[t].drop("line_no", strict=False)),
                               _stable(alone.frames[t].drop("line_no", strict=False)))  # fmt: skip
        if first is texts[0]:  # the final records come first: the same line numbers
            resized = [n for n in r.notes if "RESIZING" in n]
            assert resized == [n for n in alone.notes if "RESIZING" in n] != []


@pytest.mark.parametrize("seed", range(6))
def test_merge_jobs_equals_merge_rows_then_renumber(seed):
    """merge_jobs (the wide columns moved once) gives, row for row, what the two sorts of
    merge_rows then renumber_attempts give (the reference), on overlapping inputs with
    repeated keys, ties in every rank, running and pending rows and nulls."""
    from reliability import schema
    from reliability.store.merge import INPUT, merge_jobs, merge_rows, renumber_attempts

    rng = np.random.default_rng(seed)
    n = 400
    t0 = datetime(2026, 3, 1, tzinfo=UTC)

    def times(p_null: float) -> list[datetime | None]:
        return [None if rng.random() < p_null else t0 + timedelta(minutes=int(m))
                for m in rng.integers(0, 40, n)]  # fmt: skip

    states = ["COMPLETED", "FAILED", "RUNNING", "PENDING", "REQUEUED", "NODE_FAIL"]
    rows = {
        "cluster": rng.choice(["a", "b"], n).tolist(),
        "job_id": [str(j) for j in rng.integers(1, 12, n)],
        "attempt": rng.integers(0, 3, n).tolist(),
        "submit_time": times(0.05),
        "start_time": times(0.3),
        "end_time": times(0.4),
        "state": rng.choice(states, n).tolist(),
        "nodes": [[f"n{k}" for k in range(int(w))] for w in rng.integers(0, 4, n)],
        "name": [f"row{i}" for i in range(n)],  # (tells every row apart)
        INPUT: rng.integers(0, 4, n).tolist(),
    }
    spec = schema.TABLES["jobs"].schema
    lf = (
        pl.DataFrame(rows)
        .with_columns(
            pl.col("state").cast(spec["state"]),
            pl.col("attempt").cast(spec["attempt"]),
            pl.col(INPUT).cast(pl.UInt32),
        )
        .lazy()
    )
    want = renumber_attempts(merge_rows(lf, "jobs")).collect()
    assert 0 < want.height < n  # (keys repeat: rows merged)
    assert_frame_equal(merge_jobs(lf).collect(), want)
