"""Structured hints: a message that tells the user to change an option carries the option and
value apart from its text, and each front end spells them in its own terms (no pattern
matching of the text). The expected spellings are written out here by hand."""

from __future__ import annotations

from reliability._result_io import load_result, save_result
from reliability.errors import Hint, Hinted, render_message
from reliability.pipeline.steps.common import analysis_terms


def _hinted() -> Hinted:
    return Hinted("r_f not estimable; ", Hint("min_gpus", 4), " (the largest GPU job) or lower")


def test_the_text_is_the_library_spelling_and_the_hint_is_kept_apart():
    h = _hinted()
    assert h == "r_f not estimable; pass min_gpus=4 (the largest GPU job) or lower"
    assert h.hints == (Hint("min_gpus", 4),)
    # nested messages flatten; a mention without the verb
    both = Hinted(h, "; ", Hint("lemon_model", "m.json", action=False))
    assert both.endswith("; lemon_model='m.json'")
    assert both.hints == (Hint("min_gpus", 4), Hint("lemon_model", "m.json", action=False))


def test_a_pipeline_spells_the_hint_as_its_analysis_key():
    assert analysis_terms(_hinted()) == (
        "r_f not estimable; set [analysis].min_gpus = 4 (the largest GPU job) or lower"
    )
    assert analysis_terms(Hinted("use ", Hint("lemon_model", "m.json", action=False))) == (
        'use [analysis].lemon_model = "m.json"'
    )
    # an option that is no [analysis] key keeps the library's words
    assert analysis_terms(Hinted(Hint("peer_write_h", 0.1))) == "pass peer_write_h=0.1"


def test_the_cli_spells_the_hint_as_its_flag():
    from reliability.cli import _cli_terms, _parser

    args = _parser().parse_args(["analyze", "some-dataset"])
    assert _cli_terms(_hinted(), args) == (
        "r_f not estimable; pass --min-gpus 4 (the largest GPU job) or lower"
    )


def test_a_plain_message_is_never_respelled():
    """No pattern matching: text without hints is shown as it is by every front end."""
    plain = "r_f not estimable; pass min_gpus=4 or lower"
    assert analysis_terms(plain) == plain
    assert render_message(plain, lambda h: "never") == plain


def test_the_mttf_note_carries_its_hint_through_a_saved_result(tmp_path):
    """fit_mttf with min_gpus above every job: the note's hint is the largest job's size (read
    off the jobs here), and it survives the cache's save and load as a hint."""
    from reliability.analyses.attribution import AttributionResult
    from reliability.models.failures import fit_mttf

    a = AttributionResult._example()
    largest = int(a.jobs.get_column("n_accelerators").max())
    fit = fit_mttf(a.jobs, min_gpus=largest + 1, observation_end=a.observation_end)
    note = next(n for n in fit.notes if "not estimable" in n)
    assert isinstance(note, Hinted)
    assert note.hints == (Hint("min_gpus", largest),)
    save_result(fit, tmp_path / "r")
    back = next(n for n in load_result(tmp_path / "r").notes if "not estimable" in n)
    assert isinstance(back, Hinted)
    assert back.parts == note.parts
    assert f"set [analysis].min_gpus = {largest} or lower" in analysis_terms(back)


def test_a_message_survives_json_and_pickle_with_its_hints():
    """The manifest's note_parts (to_json/from_json) and a worker's exception (pickle) keep the
    text and every hint: values of each kind, a placeholder and a time."""
    import json
    import pickle
    from datetime import UTC, datetime

    from reliability.errors import IngestError, Placeholder, message_of

    t = datetime(2025, 3, 1, 12, tzinfo=UTC)
    m = Hinted(
        "a ", Hint("tz", "UTC", action=False), " b ", Hint("year", 2025), " c ",
        Hint("wait_s", Placeholder("SECONDS"), action=False), " d ",
        Hint("observed_at", t, action=False), Hint("replace", True, action=False),
    )  # fmt: skip
    assert m == (
        "a tz='UTC' b pass year=2025 c wait_s=SECONDS d observed_at=2025-03-01T12:00:00+00:00"
        "replace=True"
    )
    back = Hinted.from_json(json.loads(json.dumps(m.to_json())))
    assert back.parts == m.parts
    err = pickle.loads(pickle.dumps(IngestError("f.log", m, line=2)))
    assert message_of(err).hints == m.hints
    assert str(err) == f"f.log:2: {m}"
