"""Exceptions raised by the package, each naming what failed and where.

Messages name the options a user passed in Python's spelling, ``tz=`` or ``tz='UTC'``. A
message that tells the user to change an option can carry it as a structured :class:`Hint`
(a :class:`Hinted` message: ``Hint("min_gpus", 4)``), which each front end renders in its own
terms (:meth:`Hinted.render`: the CLI says ``--min-gpus 4``, a pipeline
``[analysis].min_gpus = 4``, the library ``min_gpus=4``). Plain messages are respelled by
pattern (:func:`spell_options`), the fallback for those not yet hinted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OPTION_NAMES",
    "DatasetDamagedError",
    "DatasetError",
    "DatasetLockedError",
    "Hint",
    "Hinted",
    "IngestError",
    "PipelineError",
    "ReliabilityError",
    "SchemaError",
    "render_message",
    "spell_options",
]

#: Option names that messages may mention as ``name=`` (reader options and ingest switches).
OPTION_NAMES = (
    "tz",
    "cluster",
    "fields",
    "year",
    "node",
    "boot_time",
    "scraped_at",
    "table",
    "window_start",
    "window_end",
    "observed_at",
    "unrecorded",
    "replace",
    "strict",
)


class ReliabilityError(Exception):
    """Base class of the package's own errors."""


class SchemaError(ReliabilityError, ValueError):
    """A frame does not match the canonical schema of its table.

    Parameters
    ----------
    table : str
        Name of the canonical table (``jobs``, ``health_events``...).
    column : str or None
        The offending column, or None for table-level problems.
    problem : str
        What is wrong, in words.
    """

    def __init__(self, table: str, column: str | None, problem: str) -> None:
        self.table = table
        self.column = column
        self.problem = problem
        where = f"{table}.{column}" if column else table
        super().__init__(f"{where}: {problem}")


class IngestError(ReliabilityError, ValueError):
    """An input cannot be read at all (as opposed to a bad row, which is quarantined).

    The message names the file, and the line and field when they are known.

    Parameters
    ----------
    path : str
        The input's name as the user knows it.
    problem : str
        What is wrong, in the user's terms.
    line : int or None
        1-based line (or record) number where the problem is, when known.
    field : str or None
        The field or column the problem is in, when known.
    """

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.problem = problem
        where = self.path
        if line is not None:
            where += f":{line}"
        if field is not None:
            where += f": field {field!r}"
        super().__init__(f"{where}: {problem}")

    def renamed(self, path: str) -> IngestError:
        """Return the same error naming another input path.

        Parameters
        ----------
        path : str
            The name the user knows the input by (e.g. ``<stdin>`` for a spooled copy of standard
            input); replaces this error's path in its message too.

        Returns
        -------
        IngestError
            A new error with the same problem, line and field.
        """
        return IngestError(
            path, self.problem.replace(self.path, path), line=self.line, field=self.field
        )


class PipelineError(ReliabilityError):
    """A pipeline file is missing, malformed or has a bad value."""


class DatasetError(ReliabilityError):
    """A Dataset folder cannot be read or written as asked (damaged, busy, inconsistent)."""


class DatasetLockedError(DatasetError):
    """Another process is writing the Dataset (it holds the lock)."""


class DatasetDamagedError(DatasetError):
    """The Dataset's files disagree with its manifest, or the manifest is missing.

    The message names the file and says what to run (``reliability verify`` / ``repair``).
    """


#: a value after ``name=``: quoted, ``[...]``, or a bare word (not ending in punctuation)
_VALUE = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\[\.\.\.\]|[^\s,;()]*[^\s,;():.])"""


def spell_options(
    message: str,
    spell: Callable[[str, str | None], str],
    names: Iterable[str] = OPTION_NAMES,
) -> str:
    """Rewrite every ``name=`` / ``name=value`` of an option in ``message`` with ``spell``.

    Parameters
    ----------
    message : str
        An error message or note in Python's spelling (``pass tz=``, ``tz='UTC'``).
    spell : callable
        ``spell(name, value)`` -> the front end's spelling; ``value`` is the text after ``=`` with
        quotes removed (None when there is none; ``"..."`` for ``[...]``).
    names : iterable of str
        The option names to rewrite.

    Returns
    -------
    str
        The message with each mention respelled; other text is unchanged.
    """
    alts = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    if not alts:
        return message
    pattern = re.compile(rf"(?<![\w.\-=])({alts})=({_VALUE})?")

    def sub(m: re.Match[str]) -> str:
        value = m.group(2)
        if value is not None:
            if value[:1] in "'\"" and value[-1:] == value[:1] and len(value) >= 2:
                value = value[1:-1]
            elif value == "[...]":
                value = "..."
        return spell(m.group(1), value)

    return pattern.sub(sub, message)


@dataclass(frozen=True)
class Hint:
    """An option a message tells the user to change, in no front end's spelling.

    Parameters
    ----------
    option : str
        The library's keyword (``"min_gpus"``); a pipeline's ``[analysis]`` key of the same name.
    value : object or None
        The value to give; None: a value of the user's own.
    action : bool
        The hint is an instruction (rendered with the front end's verb: ``pass min_gpus=4``,
        ``set [analysis].min_gpus = 4``), not a mention of the option.
    """

    option: str
    value: Any = None
    action: bool = True

    def library(self) -> str:
        """Spell the hint as a Python caller would write it (``pass min_gpus=4``).

        Returns
        -------
        str
            ``option=value`` (``option=`` without a value), after ``pass`` for an action.
        """
        text = f"{self.option}=" + ("" if self.value is None else _py(self.value))
        return f"pass {text}" if self.action else text


def _py(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


class Hinted(str):
    """A message (a ``str``: its text is the library's spelling) with its hints kept apart.

    Built from text and :class:`Hint` parts; :meth:`render` spells the hints in a front end's
    terms. Saved results keep the parts (:mod:`reliability._result_io`). A string operation on
    it (slicing, an f-string) returns plain text in the library's spelling.

    Parameters
    ----------
    *parts : str or Hint
        The message's text and hints, in order.
    """

    parts: tuple[str | Hint, ...]

    def __new__(cls, *parts: str | Hint) -> Hinted:  # noqa: D102
        flat: list[str | Hint] = []
        for p in parts:
            flat.extend(p.parts if isinstance(p, Hinted) else (p,))
        obj = super().__new__(
            cls, "".join(p.library() if isinstance(p, Hint) else str(p) for p in flat)
        )
        obj.parts = tuple(flat)
        return obj

    @property
    def hints(self) -> tuple[Hint, ...]:
        """The message's hints, in order."""
        return tuple(p for p in self.parts if isinstance(p, Hint))

    def render(self, spell: Callable[[Hint], str]) -> str:
        """Spell the message with each hint as ``spell(hint)`` returns it.

        Parameters
        ----------
        spell : callable
            ``spell(hint)`` -> the front end's text for it (verb included for an action).

        Returns
        -------
        str
            The message in the front end's terms.
        """
        return "".join(spell(p) if isinstance(p, Hint) else p for p in self.parts)


def render_message(
    message: str, spell: Callable[[Hint], str], fallback: Callable[[str], str]
) -> str:
    """Render a message in a front end's terms: its hints if it has them, else by pattern.

    Parameters
    ----------
    message : str
        A library message or note (a :class:`Hinted` one or plain text).
    spell : callable
        ``spell(hint)`` -> the front end's text for a hint.
    fallback : callable
        ``fallback(text)`` -> plain text respelled (e.g. with :func:`spell_options`).

    Returns
    -------
    str
        The message in the front end's terms.
    """
    if isinstance(message, Hinted):
        return message.render(spell)
    return fallback(message)
