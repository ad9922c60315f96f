"""One export command (issue 15): the README, the template pipeline and the reader's errors all
quote sacct.fields' constants, and the commands are complete exports of what the reader uses."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from reliability.errors import IngestError
from reliability.ingest import read_sacct
from reliability.ingest.sacct.fields import (
    EXPORT_FIELDS,
    REQUIRED_FIELDS,
    SACCT_EXPORT_COMMAND,
    SACCTMGR_EVENTS_COMMAND,
    USED_FIELDS,
    sacct_export_args,
    sacctmgr_events_args,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_command_is_a_complete_export():
    args = shlex.split(SACCT_EXPORT_COMMAND)
    assert args[0] == "SLURM_TIME_FORMAT=%s"
    for flag in ("--allusers", "--duplicates", "--parsable2", "--starttime", "--endtime"):
        assert flag in args
    fields = next(a for a in args if a.startswith("--format=")).split("=", 1)[1].split(",")
    assert fields == list(EXPORT_FIELDS)
    assert set(REQUIRED_FIELDS) <= set(fields)
    # every field the reader turns into a canonical column is exported (GRES fields are the
    # pre-TRES spelling of AllocTRES, TimelimitRaw/AllocNodes the raw forms of what is there)
    alternatives = {"AllocGRES", "ReqGRES", "Gres", "TimelimitRaw", "AllocNodes"}
    assert set(USED_FIELDS) - alternatives <= set(fields)
    # the argument list collect runs is the same command
    start, end = args[args.index("--starttime") + 1], args[args.index("--endtime") + 1]
    assert sacct_export_args(start, end) == args[1:]
    margs = shlex.split(SACCTMGR_EVENTS_COMMAND)
    assert sacctmgr_events_args("2025-01-01T00:00:00", "2025-12-01T00:00:00") == margs


@pytest.mark.parametrize("doc", ["README.md", "pipelines/slurm-export.toml"])
def test_documents_quote_the_commands(doc):
    text = (ROOT / doc).read_text()
    assert SACCT_EXPORT_COMMAND in text
    assert SACCTMGR_EVENTS_COMMAND in text


def test_errors_quote_the_command(tmp_path):
    p = tmp_path / "s.psv"
    p.write_text("JobID|State|Cluster\n1|COMPLETED|c\n")
    with pytest.raises(IngestError) as err:
        read_sacct(p, tz="UTC")
    assert SACCT_EXPORT_COMMAND in str(err.value)


def test_the_recommended_export_reads_cleanly(tmp_path):
    """A file in exactly the recommended format (epoch times) needs no option at all."""
    header = "|".join(EXPORT_FIELDS)
    row = {
        "JobID": "7", "JobName": "train", "JobIDRaw": "7", "Cluster": "c", "Partition": "gpu",
        "Account": "a", "User": "u", "QOS": "normal", "Priority": "10", "State": "COMPLETED",
        "ExitCode": "0:0", "Submit": "1735689600", "Start": "1735689660", "End": "1735693200",
        "Timelimit": "1-00:00:00", "NNodes": "2", "AllocTRES": "cpu=8,gres/gpu=16,node=2",
        "ReqTRES": "cpu=8", "NodeList": "n[01-02]",
    }  # fmt: skip
    p = tmp_path / "s.psv"
    p.write_text(header + "\n" + "|".join(row[f] for f in EXPORT_FIELDS) + "\n")
    job = read_sacct(p).frames["jobs"].row(0, named=True)
    assert (job["n_accelerators"], job["nodes"], job["time_limit_s"]) == (16, ["n01", "n02"], 86400)
