"""A file given to the wrong reader is refused, saying what it is and which reader reads it.

A sacct export given to `ingest dcgm` quarantined all of its lines, each with a reason that
said nothing of what the file is (and `ingest kernel` read no record from it at all, without
a word); the Dataset kept a quarantine of the whole file. Each sample here is written in the
test, in the form its reader documents, and is read by its own reader as a control.
"""

from __future__ import annotations

import pytest

from reliability.cli import main
from reliability.ingest import READERS

#: each reader's sample (:attr:`reliability.ingest.ReaderSpec.sample`): a new reader is in
#: the matrix without editing it
SAMPLES = {k: s.sample for k, s in READERS.items() if s.sample is not None}
OPTIONS = {
    k: [x for name, v in s.options.items() for x in (READERS[k].option(name).flag, str(v))]
    for k, s in SAMPLES.items()
}
#: what the refusal says the file is, written here for the readers of today
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


def test_the_matrix_covers_the_readers_of_today():
    assert set(WHAT) <= set(SAMPLES)


def _sample(tmp_path, sample: str):
    """The sample written to a file under its own name (the health reader reads .csv files)."""
    path = tmp_path / SAMPLES[sample].name
    path.write_text(SAMPLES[sample].text, encoding="utf-8")
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
    assert f"this is {WHAT.get(sample, '')}" in err
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
    path.write_text(SAMPLES["health"].text.replace("2025-01-01T00:00:00Z", "yesterday"), "utf-8")
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
