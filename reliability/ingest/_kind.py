"""Tell which reader an input is for, from its first lines.

Used to refuse a file given to the wrong reader (a sacct export to ``ingest dcgm``): the
reader would quarantine every line, each with a reason that says nothing about what the file
is. Only confident signatures count; a file none of them matches is left to its reader.
"""

from __future__ import annotations

from pathlib import Path

from reliability.errors import ReliabilityError
from reliability.ingest._common import decode_text
from reliability.ingest._compressed import open_input
from reliability.ingest._spec import FileHead

__all__ = ["HEAD_BYTES", "input_kind"]

#: bytes of the start of a file looked at
HEAD_BYTES = 65536


def input_kind(path: str | Path) -> tuple[str, str] | None:
    """Return the reader (CLI kind) the start of a file is for, and what the file is.

    Each reader's signature (:attr:`reliability.ingest.ReaderSpec.signature`) is tried in the
    order of their ranks: header signatures first (a CSV's text columns may quote anything,
    e.g. an Xid message), then content signatures.

    Parameters
    ----------
    path : str or Path
        The input (gzip and UTF-16 are read as the readers read them).

    Returns
    -------
    (str, str) or None
        E.g. ``("slurm", "`sacct --parsable2` output")``; None when the start matches no
        signature with confidence (or cannot be read: the reader says why).
    """
    from reliability.ingest import READERS

    try:
        stream = open_input(path)
        try:
            raw = stream.read(HEAD_BYTES)
        finally:
            stream.close()
    except (OSError, ReliabilityError):
        return None
    head = FileHead(decode_text(raw)[0].decode("utf-8", errors="replace"))
    if not head.lines:
        return None
    for spec in sorted(READERS.values(), key=lambda s: s.rank):
        what = spec.signature(head) if spec.signature is not None else None
        if what is not None:
            return spec.kind, what
    return None
