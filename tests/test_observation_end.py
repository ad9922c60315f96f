"""The observation end ("now"): given at ingest (--observed-at), or inferred and said.

An export taken while a node is DOWN, after the last job ended: its latest timestamp is the
start of the outage. The node is out of service now (issue 37), with and without the export
time; with it, the running job is censored at the export time, not at the outage's start.
Expected values are worked out by hand from the rows written here.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from reliability import Dataset
from reliability.errors import IngestError, ReliabilityError
from reliability.models.nodes import node_health
from reliability.store.summary import summarise

HEADER = (
    "JobID|JobName|JobIDRaw|Cluster|Partition|Account|User|QOS|Priority|State|ExitCode|"
    "Submit|Start|End|Timelimit|NNodes|AllocTRES|ReqTRES|NodeList"
)


def _job(jid: int, state: str, submit: str, start: str, end: str, node: str) -> str:
    tres = "cpu=8,gres/gpu=8,node=1"
    return (
        f"{jid}|train|{jid}|rsc|gpu|ml|alice|normal|100|{state}|0:0|{submit}|{start}|{end}|"
        f"1-00:00:00|1|{tres}|{tres}|{node}"
    )


def _exports(tmp: Path) -> tuple[Path, Path]:
    sacct = tmp / "sacct.psv"
    sacct.write_text(
        "\n".join(
            [
                HEADER,
                _job(
                    1,
                    "COMPLETED",
                    "2025-03-01T08:00:00",
                    "2025-03-01T08:00:00",
                    "2025-03-01T10:00:00",
                    "n01",
                ),
                # running at export: no end
                _job(2, "RUNNING", "2025-03-01T09:00:00", "2025-03-01T09:00:00", "Unknown", "n02"),
            ]
        )
        + "\n"
    )
    events = tmp / "events.psv"
    events.write_text(
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "rsc|n03|2025-03-01T07:00:00|2025-03-01T07:30:00|DRAIN|maintenance|root(0)\n"
        # DOWN at 10:30, still down when the export was taken: the latest time in both files
        "rsc|n01|2025-03-01T10:30:00|Unknown|DOWN|Not responding|slurm(64030)\n"
    )
    return sacct, events


def test_a_node_down_at_export_is_out_of_service_now_without_observed_at(tmp_path: Path) -> None:
    sacct, events = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [sacct], tz="UTC")
    out = ds.ingest("events", [events], tz="UTC")
    # the end is inferred and the ingest says so: something is open in this input
    assert any("observed_at=" in n and "lower bound" in n for n in out[0].notes)
    assert ds.observation_end == datetime(2025, 3, 1, 10, 30, tzinfo=UTC)
    assert "latest timestamp" in ds.observation_end_basis
    h = node_health(ds)
    assert h.open_now.get_column("node").to_list() == ["n01"]
    assert h.open_now.item(0, "hours") == 0.0
    assert bool(h.by_node.filter(pl.col("node") == "n01").item(0, "out_now"))
    assert "no node out of service" not in str(h)


def test_observed_at_sets_now_and_censors_the_running_job_there(tmp_path: Path) -> None:
    sacct, events = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    at = "2025-03-01T12:00:00Z"
    ds.ingest("slurm", [sacct], tz="UTC", observed_at=at)
    out = ds.ingest("events", [events], tz="UTC", observed_at=at)
    assert not any("lower bound" in n for n in out[0].notes)
    assert ds.observation_end == datetime(2025, 3, 1, 12, tzinfo=UTC)
    assert ds.observation_end_basis.startswith("the export time given at ingest")
    h = node_health(ds)
    # DOWN from 10:30 to the export at 12:00: 1.5 h so far, still out
    assert h.open_now.get_column("node").to_list() == ["n01"]
    assert h.open_now.item(0, "hours") == pytest.approx(1.5)
    # the running job holds 8 GPUs from 09:00 to 12:00 (3 h), the finished one 8 from 8 to 10
    s = summarise(ds)
    assert s.accelerator_hours == pytest.approx(8 * 3 + 8 * 2)
    row = s.inputs.filter(pl.col("kind") == "slurm").row(0, named=True)
    assert row["observed_until"] == datetime(2025, 3, 1, 12, tzinfo=UTC)
    assert "observed until 2025-03-01 12:00:00 UTC" in str(s)


def test_observed_at_before_the_data_is_refused_naming_the_time(tmp_path: Path) -> None:
    sacct, _ = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    with pytest.raises(IngestError, match=r"observed_at=.* is before the latest time .*5 h") as e:
        # the export's latest time is 10:00 (job 1's end); 5 h earlier is a wrong zone
        ds.ingest("slurm", [sacct], tz="UTC", observed_at="2025-03-01T05:00:00Z")
    assert "jobs.end_time" in str(e.value)
    assert "tz=" in str(e.value)
    assert not ds.inputs


@pytest.mark.parametrize("bad", ["2025-03-01T12:00:00", "yesterday", "1800-01-01T00:00:00Z"])
def test_observed_at_must_be_an_aware_time(tmp_path: Path, bad: str) -> None:
    sacct, _ = _exports(tmp_path)
    with pytest.raises(ReliabilityError, match="observed_at="):
        Dataset(tmp_path / "ds").ingest("slurm", [sacct], tz="UTC", observed_at=bad)


def test_the_same_file_with_another_observed_at_is_refused_without_replace(tmp_path: Path) -> None:
    sacct, _ = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [sacct], tz="UTC")
    with pytest.raises(IngestError, match="observed_at"):
        ds.ingest("slurm", [sacct], tz="UTC", observed_at="2025-03-01T12:00:00Z")
    ds.ingest("slurm", [sacct], tz="UTC", observed_at="2025-03-01T12:00:00Z", replace=True)
    assert ds.observation_end == datetime(2025, 3, 1, 12, tzinfo=UTC)


def test_window_end_and_observed_at_the_earlier_ends_the_observation(tmp_path: Path) -> None:
    sacct, _ = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [sacct], tz="UTC", window_end="2025-03-01T11:00:00Z",
              observed_at="2025-03-01T12:00:00Z")  # fmt: skip
    assert ds.observation_end == datetime(2025, 3, 1, 11, tzinfo=UTC)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reliability", *argv], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def test_cli_observed_at_and_info(tmp_path: Path) -> None:
    import os

    sacct, events = _exports(tmp_path)
    d = str(tmp_path / "ds")
    # written 20 min after its latest record (10:30): plausibly the export itself
    written = datetime(2025, 3, 1, 10, 50, tzinfo=UTC).timestamp()
    os.utime(events, (written, written))
    r = _cli("ingest", "events", str(events), "--into", d, "--tz", "UTC")
    assert r.returncode == 0, r.stderr
    # the note speaks the CLI's language, and offers the file's modification time
    assert "--observed-at" in r.stdout
    assert "was last written at 2025-03-01T10:50:00Z" in r.stdout
    assert "observed_at=" not in r.stdout
    # a file copied years later: its modification time says nothing about the export
    copy = tmp_path / "copy.psv"
    copy.write_bytes(events.read_bytes())
    r = _cli("ingest", "events", str(copy), "--into", str(tmp_path / "d3"), "--tz", "UTC")
    assert r.returncode == 0, r.stderr
    assert "--observed-at" in r.stdout
    assert "was last written" not in r.stdout
    r = _cli("ingest", "slurm", str(sacct), "--into", d, "--tz", "UTC",
             "--observed-at", "2025-03-01T12:00:00+00:00")  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = _cli("info", d)
    assert r.returncode == 0, r.stderr
    assert "observation end ('now'): 2025-03-01 12:00:00 UTC, the export time given" in r.stdout
    assert "observed until 2025-03-01 10:30:00 UTC (latest timestamp in the input)" in r.stdout
    r = _cli("ingest", "slurm", str(sacct), "--into", str(tmp_path / "d2"), "--tz", "UTC",
             "--observed-at", "2025-03-01 12:00")  # fmt: skip
    assert r.returncode != 0
    assert "--observed-at" in r.stderr
    assert "Traceback" not in r.stderr


def test_pipeline_observed_at_key(tmp_path: Path) -> None:
    from reliability.pipeline import PipelineError, load_pipeline

    sacct, _ = _exports(tmp_path)

    def pipeline(value: str) -> Path:
        p = tmp_path / "p.toml"
        p.write_text(
            '[pipeline]\nname = "t"\n[[inputs]]\nkind = "files"\nreader = "slurm"\n'
            f'paths = ["{sacct.name}"]\ntz = "UTC"\nobserved_at = {value}\n'
        )
        return p

    cfg = load_pipeline(pipeline("2025-03-01T12:00:00Z"))  # a TOML time with an offset
    assert cfg.inputs[0].options["observed_at"] == datetime(2025, 3, 1, 12, tzinfo=UTC)
    assert load_pipeline(pipeline('"2025-03-01T12:00:00+00:00"')).inputs[0].options
    # a TOML local time has no zone: refused, naming the key as the pipeline spells it
    with pytest.raises(PipelineError, match=r"inputs\[0\]\.observed_at.*UTC offset"):
        load_pipeline(pipeline("2025-03-01T12:00:00"))


def test_observed_at_in_the_future_is_refused(tmp_path: Path) -> None:
    """An export cannot have been taken after this machine's clock (beyond an hour of skew):
    2099 would count the running job and the down node as open for 74 years."""
    sacct, _ = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    with pytest.raises(ReliabilityError, match=r"observed_at=.*is in the future"):
        ds.ingest("slurm", [sacct], tz="UTC", observed_at="2099-01-01T00:00:00Z")
    assert not ds.inputs


def test_observed_at_long_after_the_data_is_noted(tmp_path: Path) -> None:
    """The export's latest time is 10:30 on 1 March; an observed_at 10 days later keeps the
    running job and the down node open for those days, which the ingest says."""
    _sacct, events = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    out = ds.ingest("events", [events], tz="UTC", observed_at="2025-03-11T10:30:00Z")
    assert any("is 10.0 days after the latest time" in n for n in out[0].notes)
    # a day's gap or less is an ordinary export delay: no note
    out = Dataset(tmp_path / "ds2").ingest(
        "events", [events], tz="UTC", observed_at="2025-03-02T10:00:00Z"
    )
    assert not any("days after the latest time" in n for n in out[0].notes)


def test_node_health_without_attribution_does_not_claim_no_hardware_failure(tmp_path: Path) -> None:
    """Without attributed jobs the repeat offenders were not looked for: the text says so
    rather than "no hardware-attributed failure names a node"."""
    sacct, events = _exports(tmp_path)
    ds = Dataset(tmp_path / "ds")
    ds.ingest("slurm", [sacct], tz="UTC")
    ds.ingest("events", [events], tz="UTC")
    h = node_health(ds)
    assert not h.offenders_assessed
    assert "repeat offenders not assessed" in str(h)
    assert "no hardware-attributed failure" not in str(h)
