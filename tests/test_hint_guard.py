"""No library string names an option as plain ``name=`` text (issue 38, item 2).

A message that names an option the user can set carries it as a structured
:class:`~reliability.errors.Hint`, which each front end spells in its own terms (the CLI's
flags, a pipeline's keys); nothing rewrites message text by pattern. This walks the package's
source (the AST, not the running code): every string literal (docstrings excepted) that holds
``name=`` for a known option fails, unless the allowlist below names it with its reason.

The known options are read from the package itself: every reader's options, the pipeline's
``[analysis]`` keys, every CLI flag's destination, and the keywords the library's messages
tell a caller to pass.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "reliability"

#: keyword arguments of library functions that messages name (beyond readers, CLI, pipeline)
LIBRARY_KEYWORDS = (
    "attributed",
    "backend",
    "ckpt_write_h",
    "days",
    "duration",
    "event",
    "min_gpus",
    "mode",
    "model",
    "observation_end",
    "observed_at",
    "peer_write_h",
    "reconfig_h",
    "repair_h",
    "replace",
    "strict",
    "variant",
    "wait_s",
    "window_days",
)

#: (file relative to the package, the option, why the literal may name it as text)
ALLOWED = {
    (
        "ingest/kernel_log.py",
        "tz",
    ): "a quarantine reason: stored as data in the quarantine table's reason column",
    (
        "ingest/kernel_log.py",
        "boot_time",
    ): "a quarantine reason: stored as data in the quarantine table's reason column",
    (
        "ingest/sacct/json.py",
        "cluster",
    ): "a quarantine reason: stored as data in the quarantine table's reason column",
    (
        "ingest/sacct/parse.py",
        "cluster",
    ): "a quarantine reason (a polars literal): stored in the quarantine table's reason column",
    (
        "sim/config.py",
        "days",
    ): "check_days' default spelling; each caller passes its own (--days, days=)",
    ("sim/emit.py", "node"): "Slurm's AllocTRES text (node=N), not an option",
    ("testing.py", "node"): "Slurm's AllocTRES text (node=N), not an option",
    (
        "sim/engine.py",
        "until",
    ): "the simulation kernel's own argument (Engine.run), below every front end",
    (
        "cli.py",
        "window_days",
    ): "the CLI's own warning names the Python fit's keyword of a detector fitted outside the CLI",
}


def _options() -> set[str]:
    from reliability.cli import _parser
    from reliability.ingest import READERS
    from reliability.pipeline.analysis import AnalysisConfig

    names = {o.name for spec in READERS.values() for o in spec.options}
    names |= {f.name for f in dataclasses.fields(AnalysisConfig)}

    def walk(p: argparse.ArgumentParser) -> None:
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    walk(sub)
            elif a.option_strings and a.dest not in ("help", "version"):
                names.add(a.dest)

    walk(_parser())
    return names | set(LIBRARY_KEYWORDS)


def _pattern(names: set[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # name= not preceded by a word character, a dot, a dash or '=' (so not utz=, x.tz=, --tz=)
    return re.compile(rf"(?<![\w.\-=\[])({alts})=")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _mentions(pattern: re.Pattern[str]) -> list[tuple[str, int, str, str]]:
    """(file, line, option, literal) for each plain mention in the package's string literals."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
            ):
                for m in pattern.finditer(node.value):
                    found.append((rel, node.lineno, m.group(1), node.value))
    return found


def test_the_pattern_finds_a_plain_mention_and_not_its_lookalikes():
    """The guard's own check, on hand-written text: it must see what it is meant to forbid."""
    p = _pattern({"tz", "year"})
    assert [m.group(1) for m in p.finditer("pass tz= (e.g. tz='UTC'); year=2025")] == [
        "tz",
        "tz",
        "year",
    ]
    assert not p.search("utz=1 --tz=UTC x.tz=1 [tz=")


def test_no_library_string_names_an_option_outside_a_hint():
    pattern = _pattern(_options())
    bad = [
        f"{f}:{line}: {opt}= in {text[:80]!r}"
        for f, line, opt, text in _mentions(pattern)
        if (f, opt) not in ALLOWED
    ]
    assert not bad, (
        "options named as plain text (use Hint(option, value) in a Hinted message, or allowlist "
        "with a reason):\n" + "\n".join(bad)
    )


def test_every_allowlist_entry_is_still_needed():
    pattern = _pattern(_options())
    seen = {(f, opt) for f, _, opt, _ in _mentions(pattern)}
    stale = sorted(set(ALLOWED) - seen)
    assert not stale, f"allowlist entries that match nothing (remove them): {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_no_front_end_respells_by_pattern():
    """The regex respelling is gone: no spell_options, no OPTION_NAMES, no fallback."""
    import reliability.errors as errors

    assert not hasattr(errors, "spell_options")
    assert not hasattr(errors, "OPTION_NAMES")
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "spell_options" not in text, path
