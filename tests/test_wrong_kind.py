"""A file given to the wrong reader is refused, saying what it is and which reader reads it.

A sacct export given to `ingest dcgm` quarantined all of its lines, each with a reason that
said nothing of what the file is (and `ingest kernel` read no record from it at all, without
a word); the Dataset kept a quarantine of the whole file. Each sample here is written in the
test, in the form its reader documents, and is read by its own reader as a control.
"""

from __future__ import annotations

import pytest

from reliability.cli import main

SAMPLES = {
    "slurm": (
        "JobID|JobName|State|Submit|Start|End|NNodes|NodeList|Cluster\n"
        "17|train|COMPLETED|2025-01-01T00:00:00|2025-01-01T00:01:00|2025-01-01T01:00:00|1|n1|c\n"
        "18|eval|FAILED|2025-01-01T00:00:00|2025-01-01T00:02:00|2025-01-01T00:30:00|1|n2|c\n"
    ),
    "dcgm": (
        "# scraped_at 2025-01-01T00:00:00Z\n"
        "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
        "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1",Hostname="n1"} 79\n'
    ),
    "kernel": (
        "2025-01-21T04:41:44.283+00:00 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
        "GPU has fallen off the bus.\n"
    ),
    "lanl": (
        "System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,"
        "node decom,fru type,mem,cputype,memtype,num intercon,purpose,Prob Started,Prob Fixed,"
        "Down Time,Facilities,Hardware,Human Error,Network,Undetermined,Software,Same Event\n"
        "2,cluster,49,6152,80,0,0,5-Apr,5-Jun,current,part,80,1,1,0,graphics.fe,"
        "6/21/2005 10:54,6/21/2005 11:00,6,,Graphics Accel Hdwr,,,,,No\n"
    ),
    "pod": (
        '{"time": "2025-01-01T00:00:00Z", "event": "inventory", "component_type": "host", '
        '"component_id": "h1", "cluster": "p"}\n'
        '{"time": "2025-01-02T00:00:00Z", "event": "component_fail", "component_type": "host", '
        '"component_id": "h1", "cluster": "p"}\n'
    ),
    # its message quotes an Xid line: a CSV's text is not a kernel log's
    "health": (
        "node,time,source,component,code,severity,message\n"
        'n1,2025-01-01T00:00:00Z,kernel_log,gpu,79,critical,"NVRM: Xid (PCI:0000:3b:00): 79, '
        'pid=0, GPU has fallen off the bus."\n'
    ),
    "events": (
        "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "c|n1|2025-01-01T00:00:00|2025-01-01T06:00:00|DOWN|Xid 79|root\n"
    ),
    "nodes": (
        "NodeName=n1 Arch=x86_64 CoresPerSocket=32\n"
        "   State=DOWN+DRAIN ThreadsPerCore=1\n"
        "   Reason=Xid 79 [root@2025-01-01T00:00:00]\n"
    ),
}
OPTIONS = {
    "slurm": ["--cluster", "c", "--tz", "UTC"],
    "dcgm": ["--cluster", "c"],
    "kernel": ["--cluster", "c"],
    "lanl": [],
    "pod": ["--cluster", "p"],
    "health": ["--cluster", "c"],
    "events": ["--cluster", "c", "--tz", "UTC"],
    "nodes": ["--cluster", "c", "--tz", "UTC"],
}
WHAT = {
    "slurm": "`sacct --parsable2` output",
    "dcgm": "a DCGM exporter scrape",
    "kernel": "a kernel log with NVIDIA Xid messages",
    "lanl": "the LANL failure records",
    "pod": "a TPU pod event log",
    "health": "a health_events CSV",
    "events": "`sacctmgr --parsable2 show event` output",
    "nodes": "`scontrol show node` output",
}


def _sample(tmp_path, sample: str):
    """The sample written to a file (the health reader reads .csv or .jsonl files)."""
    path = tmp_path / (f"{sample}.csv" if sample == "health" else f"{sample}.txt")
    path.write_text(SAMPLES[sample], encoding="utf-8")
    return path


def _ingest(capsys, tmp_path, kind: str, path) -> tuple[int, str, str]:
    code = main(["ingest", kind, str(path), "--into", str(tmp_path / f"ds-{kind}"),
                 *OPTIONS[kind]])  # fmt: skip
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_each_sample_is_read_by_its_own_reader(tmp_path, capsys, sample):
    path = _sample(tmp_path, sample)
    code, out, err = _ingest(capsys, tmp_path, sample, path)
    assert code == 0, err
    assert "kept 0" not in out
    assert "this is" not in err


@pytest.mark.parametrize(
    ("sample", "kind"), [(s, k) for s in sorted(SAMPLES) for k in sorted(SAMPLES) if s != k]
)
def test_a_file_given_to_another_reader_says_what_it_is(tmp_path, capsys, sample, kind):
    path = _sample(tmp_path, sample)
    code, _, err = _ingest(capsys, tmp_path, kind, path)
    assert code == 2
    assert f"this is {WHAT[sample]}" in err
    assert f"`reliability ingest {sample}`" in err
    assert not (tmp_path / f"ds-{kind}" / "manifest.json").exists()  # nothing kept


def test_a_file_of_the_right_kind_with_every_record_bad_is_still_quarantined(tmp_path, capsys):
    """Only a file that is another reader's input is refused: a scrape whose every value is
    poison is a DCGM scrape, and its lines are quarantined with their reasons as before."""
    path = tmp_path / "poison.prom"
    path.write_text(
        "# scraped_at 2025-01-01T00:00:00Z\n"
        'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1",Hostname="n1"} NaN\n'
        'DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-2",Hostname="n1"} -3\n',
        encoding="utf-8",
    )
    code, out, err = _ingest(capsys, tmp_path, "dcgm", path)
    assert code == 0, err
    assert "kept 0, quarantined 2" in out


def test_text_that_quotes_another_format_does_not_decide_the_kind(tmp_path, capsys):
    """A health CSV whose message quotes an Xid line, with a bad time, is a health CSV: its
    row is quarantined, not refused as a kernel log; a syslog without Xids that holds a slurmd
    line naming "NodeName=" is a kernel log that reads no record, not `scontrol show node`."""
    path = tmp_path / "health.csv"
    path.write_text(SAMPLES["health"].replace("2025-01-01T00:00:00Z", "yesterday"), "utf-8")
    code, out, err = _ingest(capsys, tmp_path, "health", path)
    assert code == 0, err
    assert "kept 0, quarantined 1" in out
    log = tmp_path / "syslog"
    log.write_text(
        "2025-01-21T04:41:44.283+00:00 n1 slurmd[812]: debug: NodeName=n1 CPUs=64 Boards=1\n"
        "2025-01-21T04:41:45.001+00:00 n1 kernel: usb 1-1: new high-speed USB device\n",
        "utf-8",
    )
    code, out, err = _ingest(capsys, tmp_path, "kernel", log)
    assert code == 0, err
    assert "read 0" in out
