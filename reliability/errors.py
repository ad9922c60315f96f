"""Exceptions raised by the package, each naming what failed and where.

Messages name the options a user passed in Python's spelling, ``tz=`` or ``tz='UTC'``. Front
ends respell them in their own terms with :func:`spell_options`: the CLI says ``--tz UTC``, a
pipeline says ``tz = "UTC"`` in its ``[[inputs]]`` table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

__all__ = [
    "OPTION_NAMES",
    "DatasetDamagedError",
    "DatasetError",
    "DatasetLockedError",
    "IngestError",
    "PipelineError",
    "ReliabilityError",
    "SchemaError",
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
