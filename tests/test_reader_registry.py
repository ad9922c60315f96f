"""The reader registry: every spec agrees with its function and reads its sample; a reader
registered here (a throwaway "toy" format) is picked up by the CLI's kinds and flags, the
wrong-kind check, the pipeline's reader names and the store's option checks, without editing
any of them."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import polars as pl
import pytest

from reliability import Dataset, ReliabilityError, schema
from reliability.cli import main
from reliability.ingest import READERS, ReaderOption, ReaderSample, ReaderSpec, reader_options
from reliability.ingest._common import quarantine_frame, read_lines
from reliability.ingest._kind import input_kind
from reliability.ingest._spec import CLUSTER, FileHead
from reliability.pipeline.config import load_pipeline

SPECS = sorted(READERS)


@pytest.mark.parametrize("kind", SPECS)
def test_a_spec_declares_exactly_its_readers_keyword_options(kind):
    spec = READERS[kind]
    params = inspect.signature(spec.read).parameters
    takes = {n: p for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
    assert [o.name for o in spec.options] == list(takes)
    for o in spec.options:
        p = takes[o.name]
        assert o.required == (p.default is p.empty)
        assert o.required or o.default == p.default
    assert set(spec.tables) <= set(schema.TABLES)


@pytest.mark.parametrize("kind", SPECS)
def test_every_sample_reads_with_rows_read_equal_to_kept_plus_quarantined(tmp_path, kind):
    spec = READERS[kind]
    assert spec.sample is not None, f"reader {kind!r} has no sample for the test matrices"
    path = tmp_path / spec.sample.name
    path.write_text(spec.sample.text, encoding="utf-8")
    # the records of the sample, counted here: its non-blank lines, less a header line and
    # comments, with a record continued on indented lines (scontrol) counted once
    lines = [ln for ln in spec.sample.text.splitlines() if ln.strip()]
    records = [ln for ln in lines if not ln.startswith(("#", " "))]
    header = kind in ("slurm", "events", "health", "lanl")
    result = spec(path, **spec.sample.options)
    assert result.rows_read == result.rows_kept + result.rows_quarantined
    assert result.rows_read == len(records) - header
    assert result.rows_kept >= 1
    assert set(result.frames) <= set(spec.tables)
    assert sum(f.height for f in result.frames.values()) >= 1
    # and its start is recognised as this reader's input
    assert input_kind(path) is None or input_kind(path)[0] == kind


def test_options_of_the_same_name_have_one_type():
    opts = reader_options()
    for spec in READERS.values():
        for o in spec.options:
            assert (opts[o.name].type, opts[o.name].choices) == (o.type, o.choices)


# --- a throwaway reader: "TOY <node> <ISO time> <code>" lines -> health_events ---------------

_TOY_LINE = "TOY "
_LEVELS = ("warning", "critical")


def _is_toy(head: FileHead) -> str | None:
    return "a toy log" if head.lines[0].startswith(_TOY_LINE) else None


def _read_toy(path, *, cluster: str, level: str = "critical"):
    """Read TOY lines; a line with a bad time is quarantined (the reference reader of the test)."""
    from reliability.ingest import ReadResult

    frame, _ = read_lines(path)
    rows, q = [], ([], [], [])
    for no, text in zip(frame["line_no"], frame["line"], strict=True):
        if not text.strip():
            continue
        parts = text.split()
        try:
            if parts[0] != "TOY":
                raise ValueError("not a TOY line")
            t = datetime.fromisoformat(parts[2]).astimezone(UTC)
        except (ValueError, IndexError) as exc:
            q[0].append(no), q[1].append(text), q[2].append(str(exc))
            continue
        rows.append((cluster, parts[1], t, "health_check", "gpu", parts[3], level, None, ""))
    events = pl.DataFrame(rows, schema=schema.TABLES["health_events"].schema, orient="row")
    return ReadResult(
        str(path),
        {"health_events": events},
        quarantine_frame(str(path), *q),
        rows_read=len(rows) + len(q[0]),
        rows_kept=len(rows),
    )


TOY = ReaderSpec(
    kind="toy",
    summary="toy logs of node checks",
    options=(
        CLUSTER.required_(),
        ReaderOption("level", "choice", "toy severity", default="critical", choices=_LEVELS),
    ),
    tables=("health_events",),
    signature=_is_toy,
    rank=5,
    sample=ReaderSample(
        "toy.log",
        "TOY n1 2025-01-01T00:00:00+00:00 79\nTOY n2 2025-01-01T01:00:00+00:00 48\n",
        {"cluster": "c"},
    ),
    read=_read_toy,
)


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setitem(READERS, "toy", TOY)
    path = tmp_path / TOY.sample.name
    path.write_text(TOY.sample.text, encoding="utf-8")
    return path


def test_a_registered_reader_is_a_cli_kind_with_its_flags(toy, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "toy: toy logs of node checks" in out
    assert "--level {warning,critical}" in out
    into = tmp_path / "ds"
    code = main(
        ["ingest", "toy", str(toy), "--into", str(into), "--cluster", "c", "--level", "warning"]
    )
    assert code == 0, capsys.readouterr().err
    events = Dataset(into).health_events
    assert events["node"].to_list() == ["n1", "n2"]
    assert set(events["severity"].to_list()) == {"warning"}


def test_a_registered_reader_is_in_the_wrong_kind_matrix(toy, tmp_path, capsys):
    """The toy log given to every other reader is refused as a toy log (rank 5 puts its
    signature first); every other sample given to the toy reader is refused naming its own."""
    assert input_kind(toy) == ("toy", "a toy log")
    for kind in SPECS:
        flags = ["--cluster", "c"] if READERS[kind].option("cluster") else []
        code = main(["ingest", kind, str(toy), "--into", str(tmp_path / f"ds-{kind}"), *flags])
        err = capsys.readouterr().err
        assert code == 2, (kind, err)
        assert "this is a toy log" in err, (kind, err)
        assert "`reliability ingest toy`" in err
    for kind in SPECS:
        sample = READERS[kind].sample
        path = tmp_path / f"other-{sample.name}"
        path.write_text(sample.text, encoding="utf-8")
        code = main(["ingest", "toy", str(path), "--into", str(tmp_path / "dt"), "--cluster", "c"])
        err = capsys.readouterr().err
        assert code == 2
        assert f"`reliability ingest {kind}`" in err, (kind, err)


def test_a_registered_reader_is_a_pipeline_reader_with_checked_options(toy, tmp_path):
    toml = tmp_path / "p.toml"
    body = (
        '[pipeline]\nname = "t"\n\n[[inputs]]\nkind = "files"\nreader = "toy"\n'
        f'paths = ["{toy.name}"]\ncluster = "c"\n'
    )
    toml.write_text(body + 'options = { level = "warning" }\n')
    cfg = load_pipeline(toml)
    assert cfg.inputs[0].reader == "toy"
    toml.write_text(body + 'options = { level = "fatal" }\n')
    with pytest.raises(ReliabilityError, match=r"options\.level = \"fatal\": expected one of"):
        load_pipeline(toml)
    with pytest.raises(ReliabilityError, match="'toy' inputs need cluster="):
        Dataset(tmp_path / "ds").ingest("toy", toy)
