"""Exceptions raised by the package, each naming what failed and where."""

from __future__ import annotations

__all__ = ["IngestError", "ReliabilityError", "SchemaError"]


class ReliabilityError(Exception):
    """Base class of the package's own errors."""


class SchemaError(ReliabilityError, ValueError):
    """A frame does not match the canonical schema of its table.

    Parameters
    ----------
    table : name of the canonical table (``jobs``, ``health_events``...)
    column : the offending column, or None for table-level problems
    problem : what is wrong, in words
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
