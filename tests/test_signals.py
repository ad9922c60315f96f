"""Signal calibration (reliability.models.nodes.signals) on hand-built histories whose shares,
baselines and policy outcomes are worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from reliability.models.nodes.signals import signal_calibration

T0 = datetime(2025, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)


def _job(jid: str, node: str, start_h: float, end_h: float, state: str) -> dict:
    return {"cluster": "c", "job_id": jid, "attempt": 0, "nodes": [node], "n_nodes": 1,
            "n_accelerators": 8, "submit_time": T0 + start_h * H, "start_time": T0 + start_h * H,
            "end_time": T0 + end_h * H, "state": state, "exit_code": 1}  # fmt: skip


def _he(node: str, t_h: float, code: str) -> dict:
    return {"cluster": "c", "node": node, "time": T0 + t_h * H, "source": "kernel_log",
            "component": "gpu", "code": code, "severity": "critical", "device": None, "message": ""}  # fmt: skip


def _frames(jobs: list[dict], he: list[dict]) -> dict[str, pl.DataFrame]:
    states = pl.DataFrame(schema={"cluster": pl.String, "node": pl.String, "state": pl.String,
                                  "start": pl.Datetime("us", "UTC"), "end": pl.Datetime("us", "UTC"),
                                  "reason": pl.String, "user": pl.String})  # fmt: skip
    return {"jobs": pl.DataFrame(jobs), "health_events": pl.DataFrame(he), "node_states": states}


def test_share_baseline_and_lift_by_hand():
    """Node n1 runs ten 10-hour jobs back to back (0-100 h). Jobs 3 and 7 end FAILED; the
    others COMPLETED. Xid 79 fires at 25 h (job 3, 20-30 h, fails 5 h later) and at 55 h
    (job 6, 50-60 h, completes). Horizon 6 h:
    - share = 1/2 (one of two events followed within 6 h), lead 5 h = 300 min;
    - baseline = busy time from which a running job failed within 6 h / busy time:
      [24, 30] and [64, 70] -> 12 h of 100 h = 0.12; lift = 0.5 / 0.12."""
    jobs = [_job(str(i), "n1", 10 * i, 10 * (i + 1), "FAILED" if i in (2, 6) else "COMPLETED")
            for i in range(10)]  # fmt: skip
    s = signal_calibration(_frames(jobs, [_he("n1", 25, "79"), _he("n1", 55, "79")]), horizon_h=6)
    row = s.signals.filter(pl.col("signal") == "kernel_log Xid 79").row(0, named=True)
    assert (row["events"], row["exposed"], row["followed"]) == (2, 2, 1)
    assert row["share"] == pytest.approx(0.5)
    assert row["baseline"] == pytest.approx(0.12)
    assert row["lift"] == pytest.approx(0.5 / 0.12)
    assert row["lead_min_median"] == pytest.approx(300.0)
    # a failure 7 h after the signal is outside a 6-h horizon, inside a 12-h one
    late = signal_calibration(_frames(jobs, [_he("n1", 23, "79")]), horizon_h=6)
    assert late.signals.item(0, "followed") == 0
    assert (
        signal_calibration(_frames(jobs, [_he("n1", 23, "79")]), horizon_h=12).signals.item(
            0, "followed"
        )
        == 1
    )


def test_an_event_on_an_idle_node_is_not_exposed():
    jobs = [_job("1", "n1", 0, 10, "FAILED")]
    s = signal_calibration(_frames(jobs, [_he("n1", 50, "48")]))
    row = s.signals.row(0, named=True)
    assert (row["exposed"], row["share"], row["lift"]) == (0, None, None)
    assert "none with a job running" in str(s)


def test_a_signal_on_a_node_that_never_failed_a_job_has_no_lift_and_says_so():
    """Node n2 runs two jobs that complete; Xid 79 fires during one. Exposed 1, followed 0,
    and the node's baseline is 0 (no abnormal end ever): no lift can be formed, and the text
    says why instead of printing a number (the cold tester's traceback on real run-1 data)."""
    jobs = [_job("1", "n2", 0, 10, "COMPLETED"), _job("2", "n2", 10, 20, "COMPLETED")]
    s = signal_calibration(_frames(jobs, [_he("n2", 5, "79")]), horizon_h=6)
    row = s.signals.row(0, named=True)
    assert (row["exposed"], row["followed"], row["baseline"]) == (1, 0, 0.0)
    assert row["lift"] is None
    assert row["p"] is None
    text = str(s)
    assert "no baseline" in text
    assert "None" not in text
    assert "nan" not in text
    s._repr_html_()


def test_covering_pairs_equal_the_join_on_the_node():
    """The day-binned match finds exactly the (event, run) pairs of the plain join on the node
    filtered by start <= t <= end (random runs of minutes to 9 days, events at any time,
    boundaries included)."""
    from datetime import UTC, datetime, timedelta

    import numpy as np

    from reliability.models.nodes.signals import _covering

    rng = np.random.default_rng(11)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    n_runs, n_ev = 3000, 2000
    start = [t0 + timedelta(seconds=float(x)) for x in rng.uniform(0, 40 * 86400, n_runs)]
    length = rng.choice([60.0, 3600.0, 86400.0, 9 * 86400.0], n_runs) * rng.uniform(0.1, 1, n_runs)
    runs = pl.DataFrame({
        "cluster": "c", "node": [f"n{i}" for i in rng.integers(0, 40, n_runs)], "start": start,
        "end": [s + timedelta(seconds=float(d)) for s, d in zip(start, length, strict=True)],
        "abnormal": rng.random(n_runs) < 0.3,
    })  # fmt: skip
    times = [t0 + timedelta(seconds=float(x)) for x in rng.uniform(0, 45 * 86400, n_ev)]
    times[:10] = runs["start"][:10].to_list()  # on a run's start and end exactly
    times[10:20] = runs["end"][:10].to_list()
    nodes = [f"n{i}" for i in rng.integers(0, 40, n_ev)]
    nodes[:10] = runs["node"][:10].to_list()  # the runs those boundary times belong to
    nodes[10:20] = runs["node"][:10].to_list()
    ev = pl.DataFrame({"cluster": "c", "node": nodes, "t": times}).with_row_index("_e")
    got = _covering(ev, runs).sort("_e", "start", "end")
    ref = (
        ev.join(runs, on=["cluster", "node"])
        .filter((pl.col("start") <= pl.col("t")) & (pl.col("end") >= pl.col("t")))
        .sort("_e", "start", "end")
    )
    assert got.height == ref.height > 100
    assert got.select(ref.columns).equals(ref)


def _firings_by_definition(events, k, span_h):
    """ "k events within span_h on a node fires, then re-arms": per node, in time order."""
    from datetime import timedelta

    out = []
    for (cluster, node), part in events.sort("t").group_by("cluster", "node", maintain_order=True):
        window = []
        for t in part["t"].to_list():
            window = [x for x in window if t - x <= timedelta(hours=span_h)] + [t]
            if len(window) >= k:
                out.append((cluster, node, t))
                window = []
    return sorted(out)


@pytest.mark.parametrize(("k", "span_h"), [(1, 1.0), (2, 1.0), (3, 24.0), (2, 0.5)])
def test_firings_follow_the_rule(k, span_h):
    from datetime import UTC, datetime, timedelta

    import numpy as np

    from reliability.models.nodes.signals import _firings

    rng = np.random.default_rng(k * 10 + int(span_h))
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    n = 3000
    ev = pl.DataFrame({
        "cluster": rng.choice(["a", "b"], n), "node": [f"n{i}" for i in rng.integers(0, 30, n)],
        "t": [t0 + timedelta(minutes=float(x)) for x in np.cumsum(rng.exponential(20, n))],
    }).sort("cluster", "node", "t")  # fmt: skip
    got = sorted(_firings(ev, k, span_h).iter_rows())
    assert got == _firings_by_definition(ev, k, span_h)
    assert len(got) > 10


def test_union_length_of_intervals_per_node():
    """The union of overlapping, nested and touching intervals, against a sweep by hand."""
    from datetime import UTC, datetime, timedelta

    import numpy as np

    from reliability.models.nodes.signals import _union_us

    rng = np.random.default_rng(4)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    n = 2000
    start = rng.uniform(0, 10 * 86400, n)
    length = rng.exponential(3600, n)
    iv = pl.DataFrame({
        "cluster": rng.choice(["a", "b"], n), "node": [f"n{i}" for i in rng.integers(0, 25, n)],
        "s": [t0 + timedelta(seconds=float(x)) for x in start],
        "e": [t0 + timedelta(seconds=float(x + d)) for x, d in zip(start, length, strict=True)],
    })  # fmt: skip
    got = {(c, nd): v / 1e6 for c, nd, v in _union_us(iv).iter_rows()}
    for (c, nd), part in iv.group_by("cluster", "node"):
        spans = sorted(zip(part["s"].to_list(), part["e"].to_list(), strict=True))
        total, cur_s, cur_e = 0.0, None, None
        for s, e in spans:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    total += (cur_e - cur_s).total_seconds()
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        total += (cur_e - cur_s).total_seconds()
        assert got[(c, nd)] == pytest.approx(total, abs=1e-6)
    assert len(got) == iv.select("cluster", "node").unique().height


def test_union_length_when_node_and_time_do_not_pack_into_one_integer():
    """Two centuries on 1,100 nodes: the start and the node number need more than 62 bits, so
    the intervals are sorted on both columns; the lengths are the same as by hand."""
    from datetime import UTC, datetime, timedelta

    from reliability.models.nodes.signals import _union_us

    t0 = datetime(1900, 1, 1, tzinfo=UTC)
    rows = []
    for i in range(1100):
        node = f"n{i}"
        rows += [
            ("c", node, t0, t0 + timedelta(hours=2)),
            ("c", node, t0 + timedelta(hours=1), t0 + timedelta(hours=3)),
        ]
    rows.append(
        ("c", "n0", datetime(2150, 1, 1, tzinfo=UTC), datetime(2150, 1, 1, 0, 30, tzinfo=UTC))
    )
    iv = pl.DataFrame(rows, schema=["cluster", "node", "s", "e"], orient="row")
    got = dict(
        zip(*_union_us(iv).select("node", "len_us").to_dict(as_series=False).values(), strict=True)
    )
    assert got["n0"] == (3 * 3600 + 1800) * 10**6
    assert all(got[f"n{i}"] == 3 * 3600 * 10**6 for i in range(1, 1100))


def test_sliced_matching_gives_the_hand_worked_numbers(monkeypatch):
    """The runs matched and the busy-time unions taken a few rows at a time (as at millions of
    attempts) give the hand-worked numbers of the first test: share 1/2, baseline 0.12."""
    import reliability.models.nodes.signals as sig

    monkeypatch.setattr(sig, "_RUNS_PER_SLICE", 3)
    jobs = [_job(str(i), "n1", 10 * i, 10 * (i + 1), "FAILED" if i in (2, 6) else "COMPLETED")
            for i in range(10)]  # fmt: skip
    jobs += [_job(f"b{i}", "n2", 10 * i, 10 * (i + 1), "COMPLETED") for i in range(4)]
    s = signal_calibration(_frames(jobs, [_he("n1", 25, "79"), _he("n1", 55, "79")]), horizon_h=6)
    row = s.signals.filter(pl.col("signal") == "kernel_log Xid 79").row(0, named=True)
    assert (row["events"], row["exposed"], row["followed"]) == (2, 2, 1)
    assert row["baseline"] == pytest.approx(0.12)
    assert row["lead_min_median"] == pytest.approx(300.0)


def test_time_sliced_jobs_give_the_hand_worked_numbers(monkeypatch):
    """The jobs read a span of time at a time (as at millions of attempts: a run crossing a
    cut is in both spans, its busy time split between them) give the first test's numbers."""
    import reliability.models.nodes.signals as sig

    monkeypatch.setattr(sig, "_PAIRS_PER_SLICE", 2)
    jobs = [_job(str(i), "n1", 10 * i, 10 * (i + 1), "FAILED" if i in (2, 6) else "COMPLETED")
            for i in range(10)]  # fmt: skip
    assert len(sig._time_slices(pl.DataFrame(jobs).lazy())) == 5
    s = signal_calibration(_frames(jobs, [_he("n1", 25, "79"), _he("n1", 55, "79")]), horizon_h=6)
    row = s.signals.filter(pl.col("signal") == "kernel_log Xid 79").row(0, named=True)
    assert (row["events"], row["exposed"], row["followed"]) == (2, 2, 1)
    assert row["baseline"] == pytest.approx(0.12)
    assert row["lead_min_median"] == pytest.approx(300.0)


@pytest.mark.parametrize("per_slice", [10**9, 97, 13])
def test_signal_table_against_a_brute_force_count(monkeypatch, per_slice):
    """Random overlapping runs on 6 nodes and random signals: exposed, followed and baseline
    per signal kind equal a direct count by hand (every event against every run of its node;
    busy and abnormal time as unions swept in Python), whether the jobs are read in one span
    of time or in many (a run crossing cuts; events on cuts and at run ends)."""
    import numpy as np

    import reliability.models.nodes.signals as sig

    monkeypatch.setattr(sig, "_PAIRS_PER_SLICE", per_slice)
    rng = np.random.default_rng(11)
    h = 6.0
    jobs = []
    for i in range(300):
        s0 = float(rng.uniform(0, 500))
        e0 = s0 + float(rng.exponential(8))
        state = "FAILED" if rng.random() < 0.2 else "COMPLETED"
        nodes = sorted({f"n{k}" for k in rng.integers(0, 6, int(rng.integers(1, 4)))})
        jobs.append({**_job(str(i), "x", s0, e0, state), "nodes": nodes, "n_nodes": len(nodes)})
    run_ends = [j["end_time"] for j in jobs[:20]]
    times = [T0 + float(t) * H for t in rng.uniform(-10, 510, 200)] + run_ends
    he = [{**_he(f"n{int(rng.integers(0, 6))}", 0, str(int(rng.choice([48, 79])))), "time": t}
          for t in times]  # fmt: skip
    got = signal_calibration(_frames(jobs, he), horizon_h=h).signals

    def union(spans):
        total, cur = 0.0, None
        for s, e in sorted(spans):
            if cur is None or s > cur[1]:
                total += 0 if cur is None else (cur[1] - cur[0]).total_seconds()
                cur = [s, e]
            else:
                cur[1] = max(cur[1], e)
        return total + (0 if cur is None else (cur[1] - cur[0]).total_seconds())

    base = {}
    for n in {x for j in jobs for x in j["nodes"]}:
        mine = [j for j in jobs if n in j["nodes"]]
        busy = union([(j["start_time"], j["end_time"]) for j in mine])
        bad = union([(max(j["start_time"], j["end_time"] - h * H), j["end_time"])
                     for j in mine if j["state"] == "FAILED"])  # fmt: skip
        base[n] = bad / busy if busy > 0 else 0.0
    for code in ("48", "79"):
        exposed = followed = 0
        bases = []
        for ev in he:
            if ev["code"] != code:
                continue
            on = [j for j in jobs if ev["node"] in j["nodes"]
                  and j["start_time"] <= ev["time"] <= j["end_time"]]  # fmt: skip
            if on:
                exposed += 1
                bases.append(base[ev["node"]])
                followed += any(j["state"] == "FAILED" and j["end_time"] <= ev["time"] + h * H
                                for j in on)  # fmt: skip
        row = got.filter(pl.col("signal") == f"kernel_log Xid {code}").row(0, named=True)
        assert (row["exposed"], row["followed"]) == (exposed, followed)
        assert row["baseline"] == pytest.approx(sum(bases) / len(bases), rel=1e-12)
