"""Exceptions raised by the package, each naming what failed and where.

Messages name the options a user passed in Python's spelling, ``tz=`` or ``tz='UTC'``. A
message that tells the user to change an option can carry it as a structured :class:`Hint`
(a :class:`Hinted` message: ``Hint("min_gpus", 4)``), which each front end renders in its own
terms (:meth:`Hinted.render`: the CLI says ``--min-gpus 4``, a pipeline
``[analysis].min_gpus = 4``, the library ``min_gpus=4``). Every option a library message
names is such a hint: no front end rewrites message text by pattern.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

__all__ = [
    "DatasetDamagedError",
    "DatasetError",
    "DatasetLockedError",
    "Hint",
    "Hinted",
    "IngestError",
    "PipelineError",
    "Placeholder",
    "ReliabilityError",
    "SchemaError",
    "TaskError",
    "join_messages",
    "message_of",
    "render_message",
    "replace_text",
    "value_text",
]


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
        What is wrong, in words (a :class:`Hinted` message keeps its hints).
    """

    def __init__(self, table: str, column: str | None, problem: str) -> None:
        self.table = table
        self.column = column
        self.problem = problem
        where = f"{table}.{column}" if column else table
        super().__init__(join_messages(where, ": ", problem))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.table, self.column, self.problem))


class IngestError(ReliabilityError, ValueError):
    """An input cannot be read at all (as opposed to a bad row, which is quarantined).

    The message names the file, and the line and field when they are known.

    Parameters
    ----------
    path : str
        The input's name as the user knows it.
    problem : str
        What is wrong, in the user's terms (a :class:`Hinted` message keeps its hints).
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
        super().__init__(join_messages(where, ": ", problem))

    def __reduce__(self) -> tuple[Any, ...]:
        # (a worker's error crosses to the parent whole: its keyword arguments and hints)
        return (_ingest_error, (type(self), self.path, self.problem, self.line, self.field))

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
            path, replace_text(self.problem, self.path, path), line=self.line, field=self.field
        )


def _ingest_error(
    cls: type[IngestError], path: str, problem: str, line: int | None, field: str | None
) -> IngestError:
    return cls(path, problem, line=line, field=field)


class PipelineError(ReliabilityError):
    """A pipeline file is missing, malformed or has a bad value."""


class DatasetError(ReliabilityError):
    """A Dataset folder cannot be read or written as asked (damaged, busy, inconsistent)."""


class TaskError(ReliabilityError, RuntimeError):
    """A per-cluster task still failed on the executor after its retries (naming the cluster)."""


class DatasetLockedError(DatasetError):
    """Another process is writing the Dataset (it holds the lock)."""


class DatasetDamagedError(DatasetError):
    """The Dataset's files disagree with its manifest, or the manifest is missing.

    The message names the file and says what to run (``reliability verify`` / ``repair``).
    """


@dataclass(frozen=True)
class Placeholder:
    """A value a message shows as a placeholder for the user's own (``tz=<zone>``).

    Parameters
    ----------
    text : str
        The placeholder as every front end shows it, unquoted (``"<zone>"``, ``"SECONDS"``).
    """

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Hint:
    """An option a message names or tells the user to change, in no front end's spelling.

    Parameters
    ----------
    option : str
        The library's keyword (``"min_gpus"``); a pipeline's key of the same name.
    value : object or None
        The value to give (a :class:`Placeholder` for one of the user's own); None: no value
        shown (``pass tz=``).
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
        text = f"{self.option}=" + ("" if self.value is None else value_text(self.value, "python"))
        return f"pass {text}" if self.action else text


def value_text(value: Any, style: str = "python") -> str:
    """Spell a hint's value as a front end writes it.

    Parameters
    ----------
    value : object
        The value (a :class:`Placeholder` is shown as its text in every style, a datetime in
        ISO 8601).
    style : {"python", "shell", "toml"}
        ``python``: ``'UTC'``, ``True``; ``shell``: ``UTC`` (quoted for the shell when needed);
        ``toml``: ``"UTC"``, ``true``.

    Returns
    -------
    str
        The value's text.
    """
    if isinstance(value, Placeholder):
        return str(value)
    if isinstance(value, datetime):
        value = value.isoformat()
        return value if style == "python" else value_text(value, style)
    if style == "shell":
        import shlex

        return shlex.quote(str(value))
    if style == "toml":
        if isinstance(value, bool):
            return str(value).lower()
        return json.dumps(value) if isinstance(value, str) else str(value)
    return repr(value) if isinstance(value, str) else str(value)


class Hinted(str):
    """A message (a ``str``: its text is the library's spelling) with its hints kept apart.

    Built from text and :class:`Hint` parts; :meth:`render` spells the hints in a front end's
    terms. Saved results and the dataset manifest keep the parts (:meth:`to_json`). A string
    operation on it (slicing, an f-string, ``+``) returns plain text in the library's spelling:
    join messages with :func:`join_messages` and edit them with :func:`replace_text`.

    Parameters
    ----------
    *parts : str or Hint
        The message's text and hints, in order.
    """

    parts: tuple[str | Hint, ...]

    def __new__(cls, *parts: str | Hint) -> Hinted:  # noqa: D102
        flat: list[str | Hint] = []
        for p in parts:
            for q in p.parts if isinstance(p, Hinted) else (p,):
                if isinstance(q, Hint):
                    flat.append(q)
                elif q:
                    q = str(q)
                    if flat and isinstance(flat[-1], str):
                        flat[-1] += q
                    else:
                        flat.append(q)
        obj = super().__new__(cls, "".join(p.library() if isinstance(p, Hint) else p for p in flat))
        obj.parts = tuple(flat)
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (Hinted, self.parts)

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

    def renamed(self, names: Mapping[str, str]) -> Hinted:
        """Return the message with its hints' options renamed (``window_days`` -> ``lemon_window_days``).

        Parameters
        ----------
        names : mapping of str to str
            Library option -> the caller's name for it; other options are kept.

        Returns
        -------
        Hinted
            The same text parts, the hints renamed.
        """
        return Hinted(
            *(
                replace(p, option=names.get(p.option, p.option)) if isinstance(p, Hint) else p
                for p in self.parts
            )
        )

    def to_json(self) -> list[Any]:
        """Return the parts as JSON values: text as strings, a hint as ``[option, value, action]``.

        A value that is not a JSON scalar is kept as its Python text (a :class:`Placeholder` as
        ``{"placeholder": text}``, a datetime as ``{"datetime": iso}``).

        Returns
        -------
        list
            The parts, readable by :meth:`from_json`.
        """
        out: list[Any] = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            v = p.value
            if isinstance(v, Placeholder):
                v = {"placeholder": v.text}
            elif isinstance(v, datetime):
                v = {"datetime": v.isoformat()}
            elif not (v is None or isinstance(v, bool | int | float | str)):
                v = str(v)
            out.append([p.option, v, p.action])
        return out

    @classmethod
    def from_json(cls, parts: list[Any]) -> Hinted:
        """Rebuild a message from :meth:`to_json`'s parts.

        Parameters
        ----------
        parts : list
            Text parts and ``[option, value, action]`` hints.

        Returns
        -------
        Hinted
            The message.
        """

        def hint(p: list[Any]) -> Hint:
            v = p[1]
            if isinstance(v, dict) and "placeholder" in v:
                v = Placeholder(v["placeholder"])
            elif isinstance(v, dict) and "datetime" in v:
                v = datetime.fromisoformat(v["datetime"])
            return Hint(p[0], v, bool(p[2]))

        return cls(*(p if isinstance(p, str) else hint(p) for p in parts))


def message_of(obj: object) -> str:
    """Return an exception's or note's message, a :class:`Hinted` one with its hints.

    ``str(exc)`` is the library's spelling only (a ``str`` subclass does not survive
    ``str()``); a front end renders ``message_of(exc)`` instead.

    Parameters
    ----------
    obj : object
        An exception (its message is its one argument) or a message.

    Returns
    -------
    str
        The message: a :class:`Hinted` one when it has hints, else plain text.
    """
    if isinstance(obj, Hinted):
        return obj
    if isinstance(obj, BaseException):
        hinted = getattr(obj, "hinted", None)
        if isinstance(hinted, Hinted):
            return hinted
        if len(obj.args) == 1 and isinstance(obj.args[0], Hinted):
            return obj.args[0]
    return str(obj)


def join_messages(*parts: str | Hint, sep: str = "") -> str:
    """Concatenate messages and hints, keeping the hints (plain text when there are none).

    Parameters
    ----------
    *parts : str or Hint
        Messages (plain or :class:`Hinted`), text and hints.
    sep : str
        Put between consecutive parts.

    Returns
    -------
    str
        A :class:`Hinted` message when any part carries a hint, else a plain ``str``.
    """
    seq: list[str | Hint] = []
    for i, p in enumerate(parts):
        if i and sep:
            seq.append(sep)
        seq.append(p)
    if any(isinstance(p, Hint) or (isinstance(p, Hinted) and p.hints) for p in seq):
        return Hinted(*seq)
    return "".join(str(p) for p in seq)


def replace_text(message: str, old: str, new: str) -> str:
    """Replace text in a message's text parts, keeping its hints.

    Parameters
    ----------
    message : str
        A plain or :class:`Hinted` message.
    old, new : str
        Text to replace and its replacement (never inside a hint).

    Returns
    -------
    str
        The message with ``old`` replaced; :class:`Hinted` when ``message`` was.
    """
    if isinstance(message, Hinted):
        return Hinted(*(p.replace(old, new) if isinstance(p, str) else p for p in message.parts))
    return str(message).replace(old, new)


def render_message(message: str, spell: Callable[[Hint], str]) -> str:
    """Render a message in a front end's terms: each hint as ``spell`` spells it.

    Parameters
    ----------
    message : str
        A library message or note (a :class:`Hinted` one, or plain text that names no option).
    spell : callable
        ``spell(hint)`` -> the front end's text for a hint.

    Returns
    -------
    str
        The message in the front end's terms (plain text as it is).
    """
    if isinstance(message, Hinted):
        return message.render(spell)
    return str(message)
