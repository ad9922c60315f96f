"""Bounded JSON parsing (issue 37, "Hostile input, round 3", items 1, 7, 8).

Deeply nested JSON was a RecursionError traceback through the CLI's wrong-kind check; a
lone surrogate escape (``"\\ud800"``) in a JSON line was a UnicodeEncodeError that refused
the whole file "as a bug"; a 100 MiB JSON line took about 3 GB. The structural scanner is
checked here against a character-by-character scanner written in the test.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from reliability.cli import main
from reliability.ingest import _json, read_health, read_pod_log
from reliability.ingest._json import MAX_DEPTH, MAX_LINE_BYTES, JsonLimitError, loads_record

ROOT = Path(__file__).resolve().parents[1]
POD_OK = {"time": "2025-01-01T00:00:00+00:00", "event": "inventory", "component_type": "machine",
          "component_id": "h1", "cluster": "p"}  # fmt: skip
GOOD = {"cluster": "c1", "node": "n1", "time": "2025-01-01T00:00:00Z", "source": "sim",
        "component": "gpu", "code": "1", "severity": "info", "message": "x"}  # fmt: skip


def _by_hand(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, kind, depth after) of every bracket and comma outside strings, one byte at a
    time: a quote after an odd run of backslashes does not open or close a string."""
    out, depth, inside, run = [], 0, False, 0
    for i, c in enumerate(data):
        ch, before, run = chr(c), run, (run + 1 if c == 92 else 0)
        if ch == '"' and before % 2 == 0:
            inside = not inside
        elif not inside and ch in "[{":
            depth += 1
            out.append((i, 1, depth))
        elif not inside and ch in "]}":
            depth -= 1
            out.append((i, 2, depth))
        elif not inside and ch == ",":
            out.append((i, 3, depth))
    return out


def _random_value(rng: random.Random, depth: int = 0) -> object:
    alphabet = ["\\", '"', "[", "]", "{", "}", ",", "a", " ", "é", "\\\\", '\\"']
    r = rng.random()
    if depth > 6 or r < 0.3:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
    if r < 0.6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        "".join(rng.choice(alphabet) for _ in range(3)): _random_value(rng, depth + 1)
        for _ in range(rng.randrange(4))
    }


@pytest.mark.parametrize("block", [7, 64, 1 << 20])
def test_structure_matches_a_scan_by_hand(block, monkeypatch):
    """Strings holding brackets, quotes and backslash runs, split across blocks anywhere."""
    monkeypatch.setattr(_json, "_BLOCK", block)
    rng = random.Random(block)
    texts = [json.dumps(_random_value(rng), ensure_ascii=rng.random() < 0.5).encode()
             for _ in range(150)]  # fmt: skip
    texts += [  # not JSON at all: the scan still follows its quotes
        "".join(rng.choice('\\"[]{},a é') for _ in range(rng.randrange(60))).encode()
        for _ in range(150)
    ]
    for data in texts:
        got = [(int(p), int(k), int(d))
               for s in _json.structure(data) for p, k, d in zip(s.pos, s.kind, s.depth, strict=True)]  # fmt: skip
        assert got == _by_hand(data), data


def test_depth_and_size_limits():
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_record(ok)[0] is not None
    with pytest.raises(JsonLimitError, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads_record("[" + ok + "]")
    # brackets inside strings are not nesting
    assert loads_record(json.dumps({"a": "[" * 10_000}))[0] == {"a": "[" * 10_000}
    with pytest.raises(JsonLimitError, match="longer than the 1,048,576-byte limit"):
        loads_record(json.dumps({"a": "x" * MAX_LINE_BYTES}))


def test_lone_surrogates_become_replacement_characters():
    value, fixed = loads_record('{"a\\udc00": ["\\ud800x", "\\ud83d\\ude00"]}')
    assert fixed
    assert value == {"a\ufffd": ["\ufffdx", "\U0001f600"]}  # a pair is one character
    assert loads_record('{"a": "\\u00e9"}') == ({"a": "é"}, False)


def _jsonl(tmp_path: Path, lines: list[str], name: str = "h.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_health_jsonl_surrogate_is_read_not_a_bug(tmp_path):
    line = json.dumps({**GOOD, "message": "bad \udc80 byte"})  # '\\udc80' in the file
    assert "\\udc80" in line
    r = read_health(_jsonl(tmp_path, [json.dumps(GOOD), line]))
    assert (r.rows_read, r.rows_kept) == (2, 2)
    assert r.frames["health_events"]["message"].to_list() == ["x", "bad \ufffd byte"]
    assert any("lone surrogate" in n for n in r.notes)


def test_health_jsonl_deep_and_long_lines_are_quarantined_with_the_limit(tmp_path):
    deep = json.dumps({**GOOD, "message": None})[:-1] + ', "x": ' + "[" * 100 + "]" * 100 + "}"
    long = json.dumps({**GOOD, "message": "m" * (MAX_LINE_BYTES + 10)})
    r = read_health(_jsonl(tmp_path, [json.dumps(GOOD), deep, long]))
    assert (r.rows_read, r.rows_kept) == (3, 1)
    reasons = dict(zip(r.quarantine["line_no"], r.quarantine["reason"], strict=True))
    assert f"nested deeper than {MAX_DEPTH} levels" in reasons[2]
    assert f"line of {len(long):,} bytes is longer than" in reasons[3]
    assert len(r.quarantine.filter(line_no=3).item(0, "raw")) == _json.RAW_PREFIX


def test_a_file_of_one_deep_line_is_refused_naming_line_and_limit(tmp_path):
    p = _jsonl(tmp_path, ["{" + '"a":{' * 5000 + "}" * 5001])
    with pytest.raises(
        Exception,
        match=r"h\.jsonl:1: no line is a JSON object to read; first: JSON nested deeper than 64",
    ):
        read_health(p)


@pytest.mark.parametrize(
    ("kind", "name", "text", "extra", "code"),
    [("slurm", "deep.json", "[" * 100_000, [], 2),
     ("health", "deep.jsonl", '{"a":' * 100_000 + "\n", ["--cluster", "c"], 2),
     ("pod", "deep.jsonl", "[" * 100_000 + "\n", [], 2)],
)  # fmt: skip
def test_deep_json_through_the_cli_is_a_message_not_a_traceback(
    tmp_path, capsys, kind, name, text, extra, code
):
    """The wrong-kind check, run when no record was kept, parsed the first line with
    json.loads: a RecursionError traceback. Now slurm and health refuse the file naming it,
    and so does the pod reader (its one line is no pod event, so the file is not a pod log;
    it used to quarantine the line and report success)."""
    p = tmp_path / name
    p.write_text(text)
    got = main(["ingest", kind, str(p), "--into", str(tmp_path / "ds"), *extra])
    err = capsys.readouterr().err
    assert got == code
    assert "Traceback" not in err
    assert "this is a bug" not in err
    if code:
        assert err.startswith(f"error: {p}")


def test_pod_values_that_broke_the_reader_are_quarantined(tmp_path):
    """Each of these refused the whole file as "a bug" (TypeError, ValueError,
    UnicodeEncodeError); found by the JSON-value mutations of tests/hostile."""
    t = "2025-01-01T00:00:00+00:00"
    ok = {
        "time": t,
        "event": "inventory",
        "component_type": "machine",
        "component_id": "h1",
        "cluster": "p",
    }
    sub = {
        **ok,
        "event": "job_submit",
        "component_type": "job",
        "component_id": "j1",
        "detail": "prio=prod",
    }
    lines = [json.dumps(ok), json.dumps(sub),
             json.dumps({**ok, "time": None}),  # fromisoformat(None)
             json.dumps({**ok, "event": 7}),
             json.dumps({**sub, "event": "job_start", "detail": "attempt=\u00b2;cubes=1"}),  # int('²')
             json.dumps({**sub, "event": "crossconnect", "detail": "changed=\u00b2"}),
             json.dumps({**sub, "event": "job_start", "detail": "attempt=0;cubes=\u0663"}),
             json.dumps({**ok, "component_id": "h\udc802"})]  # fmt: skip
    r = read_pod_log(_jsonl(tmp_path, lines, "pod.jsonl"))
    assert (r.rows_read, r.rows_kept) == (8, 3)
    reasons = dict(zip(r.quarantine["line_no"], r.quarantine["reason"], strict=True))
    assert reasons == {
        3: "field time: expected a string, got null",
        4: "field event: expected a string, got a number",
        5: "job_start needs attempt=N (0-65535) and cubes=",
        6: "crossconnect without changed=N",
        7: "job_start needs cubes=<cube numbers separated by commas>",
    }
    assert sorted(r.frames["inventory"]["component_id"].to_list()) == ["h1", "h\ufffd2"]


_HWM = """
def hwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM")
"""


def _peak_mb(setup: str, code: str) -> tuple[float, str]:
    """Run ``setup`` then ``code`` in a fresh interpreter; return the growth of its peak resident
    set (VmHWM: getrusage would count the parent's, inherited over fork and exec) [MiB] over
    ``setup`` and what ``code`` printed."""
    child = f"{_HWM}\n{setup}\nbase = hwm_mb()\n{code}\nprint(hwm_mb() - base)"
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120, check=True, cwd=ROOT)  # fmt: skip
    *out, grew = proc.stdout.strip().splitlines()
    return float(grew), "\n".join(out)


@pytest.mark.slow
@pytest.mark.parametrize("reader", ["read_health", "read_pod_log"])
def test_a_100_mib_json_line_is_bounded(tmp_path, reader):
    """A 100 MiB line of {},{},... took 3.3 GB (health) and 2.8 GB (pod) to read."""
    p = tmp_path / "big.jsonl"
    with p.open("w") as f:
        f.write(json.dumps(GOOD if reader == "read_health" else POD_OK) + "\n")
        f.write('{"node": "n", "message": [' + ",".join(["{}"] * (35 << 20)) + "]}\n")
    opts = ", cluster='c'" if reader == "read_health" else ""
    grew, out = _peak_mb(
        f"from reliability.ingest import {reader}",
        f"r = {reader}({str(p)!r}{opts})\n"
        "print(r.rows_read, r.rows_kept, r.quarantine['reason'][-1])",
    )
    assert out.startswith("2 1 "), out
    assert "longer than the 1,048,576-byte limit" in out, out
    # the file is 105 MB; the old reader took ~3 GB. What is left is reading the file whole
    # (2x) and polars splitting its lines (up to 4x for one huge last line): not the JSON
    assert grew < 1000, grew


def test_pod_events_that_end_before_they_begin_are_quarantined(tmp_path):
    """A repair before its failure, a job_end before its job_start (and the other pairs) were
    kept: intervals of negative length, a wrong answer with exit code 0. The closing line is
    quarantined; what it would have closed stays open, as if it were not in the log."""
    t = [f"2025-01-01T0{h}:00:00+00:00" for h in range(10)]
    m = {"component_type": "machine", "component_id": "h1", "cluster": "p"}
    j = {"component_type": "job", "component_id": "j1", "cluster": "p"}
    lines = [{**m, "time": t[5], "event": "component_fail"},
             {**m, "time": t[4], "event": "component_repair"},  # before the failure
             {**m, "time": t[6], "event": "component_repair"},
             {**m, "time": t[5], "event": "maintenance_start", "component_id": "h2"},
             {**m, "time": t[1], "event": "maintenance_end", "component_id": "h2"},  # before
             {**j, "time": t[2], "event": "job_submit", "detail": "prio=prod"},
             {**j, "time": t[1], "event": "job_start", "detail": "attempt=0;cubes=1"},  # before
             {**j, "time": t[3], "event": "job_start", "detail": "attempt=0;cubes=1"},
             {**j, "time": t[2], "event": "job_end", "detail": "state=COMPLETED"},  # before
             {**j, "time": t[8], "event": "job_end", "detail": "state=COMPLETED"}]  # fmt: skip
    r = read_pod_log(_jsonl(tmp_path, [json.dumps(x) for x in lines], "pod.jsonl"))
    assert (r.rows_read, r.rows_kept) == (10, 6)
    reasons = dict(zip(r.quarantine["line_no"], r.quarantine["reason"], strict=True))
    assert set(reasons) == {2, 5, 7, 9}
    assert reasons[2].startswith(
        "component_repair at 2025-01-01T04:00:00+00:00, before its failure"
    )
    assert all(x.endswith("(impossible order; not fixed)") for x in reasons.values())
    f = r.frames["component_failures"].select("failed_at", "repaired_at").rows()
    assert [(a.hour, b.hour) for a, b in f] == [(5, 6)]
    ns = r.frames["node_states"].select("node", "state", "end").sort("node").rows()
    assert [(n, s, e.hour if e else None) for n, s, e in ns] == [
        ("h1", "REPAIR", 6),
        ("h2", "MAINT", None),
    ]
    job = r.frames["jobs"].row(0, named=True)
    assert (job["submit_time"].hour, job["start_time"].hour, job["end_time"].hour) == (2, 3, 8)
