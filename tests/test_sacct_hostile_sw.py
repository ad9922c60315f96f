"""A cold tester's hostile sacct inputs (SW1-SW11, U1-U8): each is read right by Slurm's
semantics, quarantined naming line and field, or refused naming the file. The expectations
are worked out by hand from the rows written here."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest

from reliability.errors import IngestError
from reliability.ingest import read_sacct

HEADER = (
    "JobID|JobName|JobIDRaw|Cluster|Partition|Account|User|QOS|Priority|State|ExitCode|"
    "Submit|Start|End|Timelimit|NNodes|AllocTRES|ReqTRES|NodeList"
)
ALLOC = "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1"


def row(
    j: int, *, state="COMPLETED", nn="1", alloc=ALLOC, nodes="gpu001", jid: str | None = None
) -> str:
    return (
        f"{jid or j}|train|{j}|c1|gpu|acct|alice|normal|100|{state}|0:0|1796001600|1796001610|"
        f"1796005210|02:00:00|{nn}|{alloc}|cpu=8,gres/gpu=8,node=1|{nodes}"
    )


SEED = "\n".join([HEADER, row(100), row(101), row(102)]) + "\n"


def _write(tmp_path, data: str | bytes, name="in.psv"):
    p = tmp_path / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


def _counts(r) -> tuple[int, int, int]:
    assert r.rows_read == r.rows_kept + r.rows_quarantined
    return r.rows_read, r.rows_kept, r.rows_quarantined


def test_seed_reads_clean(tmp_path):
    r = read_sacct(_write(tmp_path, SEED))
    assert _counts(r) == (3, 3, 0)


# -- SW1: CR-only line endings -----------------------------------------------------------
def test_cr_only_line_endings_are_refused(tmp_path):
    p = _write(tmp_path, SEED.replace("\n", "\r"))
    with pytest.raises(IngestError, match=r"in\.psv:1: the file has CR-only line endings"):
        read_sacct(p)


def test_crlf_is_still_read(tmp_path):
    r = read_sacct(_write(tmp_path, SEED.replace("\n", "\r\n")))
    assert _counts(r) == (3, 3, 0)


# -- U1-U5: compressed forms other than gzip, binary data --------------------------------
@pytest.mark.parametrize(
    ("name", "pack", "what"),
    [
        ("in.psv.bz2", bz2.compress, "bzip2-compressed"),
        ("in.psv.xz", lzma.compress, "xz-compressed"),
        ("in.psv.zst", lambda b: b"\x28\xb5\x2f\xfd" + bytes(range(64)), "zstd-compressed"),
        ("in.psv.gz", lambda b: gzip.compress(gzip.compress(b)), "gzip inside gzip"),
    ],
)
def test_other_compression_is_named(tmp_path, name, pack, what):
    p = _write(tmp_path, pack(SEED.encode()), name)
    with pytest.raises(IngestError, match=rf"{name.replace('.', '[.]')}: the file is {what}"):
        read_sacct(p)


def test_binary_file_is_named(tmp_path):
    p = _write(tmp_path, bytes(range(256)) * 10)
    with pytest.raises(IngestError, match=r"the file holds binary data"):
        read_sacct(p)


def test_one_gzip_is_still_read(tmp_path):
    r = read_sacct(_write(tmp_path, gzip.compress(SEED.encode()), "in.psv.gz"))
    assert _counts(r) == (3, 3, 0)


def _reasons(r) -> list[tuple[int, str]]:
    return r.quarantine.select("line_no", "reason").rows()


# -- SW6: a host named twice ---------------------------------------------------------------
@pytest.mark.parametrize("nodes", ["n1,n1", "n[1,1]", "n[1-2],n2"])
def test_repeated_host_is_quarantined(tmp_path, nodes):
    text = "\n".join([HEADER, row(100, nn="2", nodes=nodes), row(101, nn="2", nodes="n[1-2]")])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    ((line, reason),) = _reasons(r)
    assert line == 2
    assert reason.startswith(f"field NodeList: '{nodes}' names host ")
    assert "twice" in reason
    assert r.frames["jobs"].get_column("nodes").to_list() == [["n1", "n2"]]


# -- SW7: gres/gpu with no count -----------------------------------------------------------
@pytest.mark.parametrize("alloc", ["cpu=8,,gres/gpu,node=1", "gres/gpu:a100,node=1", "gres/gpu"])
def test_gpu_tres_without_count_is_quarantined(tmp_path, alloc):
    text = "\n".join([HEADER, row(100, alloc=alloc), row(101)])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    ((line, reason),) = _reasons(r)
    assert line == 2
    assert reason.startswith("field AllocTRES: a GPU count is not a whole number")
    assert r.frames["jobs"].get_column("n_accelerators").to_list() == [8]


def test_gpumem_tres_is_no_gpu_count(tmp_path):
    alloc = "cpu=8,gres/gpumem=80G,gres/gpu=8,node=1"  # gres/gpumem is another TRES
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, row(100, alloc=alloc)]) + "\n"))
    assert _counts(r) == (1, 1, 0)
    assert r.frames["jobs"].get_column("n_accelerators").to_list() == [8]


# -- SW8: a started record on no node ------------------------------------------------------
def test_started_record_on_no_node_is_quarantined(tmp_path):
    # NNodes 0 and an empty NodeList: the empty NodeList is named (checked first)
    text = "\n".join([HEADER, row(100, nn="0", nodes=""), row(101)])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    ((line, reason),) = _reasons(r)
    assert line == 2
    assert reason.startswith("field NodeList: '' for a record that started")
    # without a NodeList field, NNodes 0 is named
    header = HEADER.removesuffix("|NodeList")
    text = "\n".join([header, row(100, nn="0").rsplit("|", 1)[0], row(101).rsplit("|", 1)[0]])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    ((line, reason),) = _reasons(r)
    assert line == 2
    assert reason.startswith("field NNodes: 0 nodes")
    assert "started" in reason


def test_never_started_record_keeps_none_assigned(tmp_path):
    # as real sacct prints a job cancelled while pending: NNodes 1, 'None assigned', no Start
    pending = row(100, state="CANCELLED by 0", nodes="None assigned").replace(
        "|1796001610|1796005210|", "|Unknown|1796005210|"
    )
    r = read_sacct(_write(tmp_path, "\n".join([HEADER, pending]) + "\n"))
    assert _counts(r) == (1, 1, 0)
    assert r.frames["jobs"].get_column("nodes").to_list() == [[]]


# -- U8: a negative node count -------------------------------------------------------------
def test_negative_node_count_is_not_a_node_count(tmp_path):
    text = "\n".join([HEADER, row(100, nn="-1"), row(101)])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    assert _reasons(r) == [(2, "field NNodes: not a node count '-1'")]


# -- SW9: a field the reader reads, named twice in the header -------------------------------
@pytest.mark.parametrize("packed", [False, True])  # memory-mapped, and streamed in blocks
def test_field_named_twice_with_differing_copies_is_quarantined(tmp_path, packed):
    # sacct prints a field once per mention in --format: equal copies are fine
    text = "\n".join([f"{HEADER}|State", row(100) + "|FAILED", row(101) + "|COMPLETED"]) + "\n"
    data = gzip.compress(text.encode()) if packed else text
    r = read_sacct(_write(tmp_path, data, "in.psv.gz" if packed else "in.psv"))
    assert _counts(r) == (2, 1, 1)
    assert _reasons(r) == [
        (
            2,
            "field State: the header names State twice and the copies differ "
            "('COMPLETED' and 'FAILED'): the record's value is unknown",
        )
    ]
    assert r.frames["jobs"].get_column("job_id").to_list() == ["101"]


def test_free_text_field_twice_is_still_read(tmp_path):
    text = "\n".join([f"{HEADER}|JobName", row(100) + "|train"]) + "\n"
    r = read_sacct(_write(tmp_path, text))
    assert _counts(r) == (1, 1, 0)


# -- SW10: digits that are not ASCII ----------------------------------------------------------
@pytest.mark.parametrize("jid", ["١٠٠", "100.١", "１００"])
def test_non_ascii_digits_in_job_id_are_quarantined(tmp_path, jid):
    text = "\n".join([HEADER, row(100, jid=jid), row(101)])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    assert _reasons(r) == [(2, f"field JobID: malformed job id '{jid}'")]
    assert r.frames["jobs"].get_column("job_id").to_list() == ["101"]


def test_non_ascii_digits_in_node_count_are_quarantined(tmp_path):
    text = "\n".join([HEADER, row(100, nn="١"), row(101)])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    assert _reasons(r)[0][0] == 2
    assert _reasons(r)[0][1].startswith("field NNodes")


# -- U7: --fields that do not fit the --noheader file --------------------------------------
def test_wrong_fields_say_so_before_the_cluster(tmp_path):
    p = _write(tmp_path, "\n".join([row(100), row(101)]) + "\n")
    with pytest.raises(IngestError, match=r"option fields= names 3 fields, but none of the first"):
        read_sacct(p, fields=["JobID", "State", "Submit"])
    r = read_sacct(p, fields=HEADER.split("|"))
    assert _counts(r) == (2, 2, 0)


# -- SW2: no newline at the end -------------------------------------------------------------
def test_unterminated_last_line_is_noted(tmp_path):
    r = read_sacct(_write(tmp_path, SEED[:-2]))  # '...|gpu001\n' cut to '...|gpu00'
    assert _counts(r) == (3, 3, 0)
    assert r.frames["jobs"].get_column("nodes").to_list()[-1] == ["gpu00"]
    assert any("the last line has no newline" in n for n in r.notes)


def test_terminated_file_has_no_such_note(tmp_path):
    for data in (SEED, SEED.replace("\n", "\r\n"), SEED.encode("utf-16")):
        r = read_sacct(_write(tmp_path, data))
        assert _counts(r) == (3, 3, 0)
        assert not any("no newline" in n for n in r.notes)


# -- SW11: sacct --json: a step with no exit code yet, and a key named twice ----------------
def _json_doc(jobs_text: str) -> bytes:
    return (
        '{"meta": {"plugin": {"type": "openapi/slurmdbd"}}, "jobs": [' + jobs_text + "]}"
    ).encode()


def test_json_pending_exit_status_is_unknown(tmp_path):
    from test_sacct_bad_input import _json_job

    job = _json_job(5)
    # as real sacct --json prints the batch step of a job cancelled in its prolog
    job["steps"][0]["exit_code"] = {"status": "PENDING", "return_code": None}
    r = read_sacct(_write(tmp_path, _json_doc(json.dumps(job)), "s.json"))
    assert _counts(r) == (2, 2, 0)
    step = r.frames["job_steps"].row(0, named=True)
    assert (step["exit_code"], step["exit_signal"]) == (None, None)
    job["steps"][0]["exit_code"] = {
        "status": "SIGNALED",
        "return_code": None,
        "signal": {"signal_id": 15, "name": "Terminated"},
    }
    r = read_sacct(_write(tmp_path, _json_doc(json.dumps(job)), "s.json"))
    step = r.frames["job_steps"].row(0, named=True)
    assert (step["exit_code"], step["exit_signal"]) == (0, 15)  # '0:15', as --parsable2


def test_json_key_named_twice_is_quarantined(tmp_path):
    from test_sacct_bad_input import _json_job

    good = json.dumps(_json_job(5))
    twice = json.dumps(_json_job(1)).replace('"job_id": 1,', '"job_id": 999999, "job_id": 1,', 1)
    assert twice.count('"job_id"') == 2
    r = read_sacct(_write(tmp_path, _json_doc(f"{good}, {twice}"), "s.json"))
    # 2 job records + the step of the one kept
    assert _counts(r) == (3, 2, 1)
    assert r.frames["jobs"].get_column("job_id").to_list() == ["5"]
    (reason,) = r.quarantine.get_column("reason").to_list()
    assert "key 'job_id' appears twice in one object" in reason


@pytest.mark.parametrize("nodes", ["", "None assigned"])
def test_started_record_without_node_list_is_quarantined(tmp_path, nodes):
    text = "\n".join([HEADER, row(100, nodes=nodes), row(101)])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (2, 1, 1)
    assert _reasons(r) == [
        (
            2,
            f"field NodeList: '{nodes}' for a record that started (1796001610): a started job "
            "or step runs on at least one node",
        )
    ]


def test_started_record_without_node_list_field_is_kept(tmp_path):
    header = HEADER.removesuffix("|NodeList")
    text = "\n".join([header, row(100).rsplit("|", 1)[0]])
    r = read_sacct(_write(tmp_path, text + "\n"))
    assert _counts(r) == (1, 1, 0)
