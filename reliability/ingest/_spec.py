"""What a reader declares about itself: :class:`ReaderSpec`, its options and file signature.

Each reader module declares one spec at its top, next to its constants (column map, null
sentinels, patterns), and binds its ``read_<source>`` function to it::

    SPEC = ReaderSpec(
        kind="dcgm",
        summary="DCGM exporter scrapes (Prometheus text)",
        options=(CLUSTER.required_(), NODE, ...),
        tables=("health_events",),
        signature=_looks_like_a_scrape,
        sample=ReaderSample("n1.prom", "DCGM_FI_DEV_XID_ERRORS{...} 79", {"cluster": "c"}),
    )

    @SPEC.reads
    def read_dcgm(path, *, cluster, node=None, scraped_at=None): ...

:data:`reliability.ingest.READERS` is built from the specs; the CLI's ``ingest`` kinds and
flags, the pipeline's ``reader =`` and ``options``, the check of a file given to the wrong
reader (:func:`reliability.ingest._kind.input_kind`) and the test matrices iterate over it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from reliability.ingest._common import ReadResult
from reliability.ingest._json import loads_record
from reliability.ingest._slurm_text import identify

__all__ = [
    "CLUSTER",
    "NODE",
    "OPTION_TYPES",
    "TZ",
    "FileHead",
    "ReaderOption",
    "ReaderSample",
    "ReaderSpec",
]

#: The value types of reader options, each checked and parsed the same way everywhere:
#: ``name`` a non-empty string (``cluster=``, ``node=``), ``zone`` an IANA time zone, ``year``
#: a calendar year, ``time`` an aware datetime (ISO 8601 with an offset on the CLI), ``names``
#: a list of strings (comma-separated on the CLI), ``choice`` one of ``choices``.
OPTION_TYPES = ("name", "zone", "year", "time", "names", "choice")


@dataclass(frozen=True)
class ReaderOption:
    """One keyword option of a reader: the CLI flag and the pipeline key are built from it.

    Attributes
    ----------
    name : str
        The reader's keyword (``boot_time``); the CLI flag is ``--boot-time``, the pipeline key
        ``options.boot_time`` (``cluster`` and ``tz`` are keys of the input itself).
    type : str
        One of :data:`OPTION_TYPES`.
    help : str
        One line for ``--help``.
    required : bool
        The reader has no default for it.
    default : object
        The reader's default (None: unset).
    choices : tuple of str
        The accepted values, for ``type="choice"``.
    cli : bool
        Whether ``reliability ingest`` has a flag for it (False: library and pipelines only,
        e.g. sacct's ``window_start=`` that ``reliability collect`` sets).
    """

    name: str
    type: str
    help: str
    required: bool = False
    default: object = None
    choices: tuple[str, ...] = ()
    cli: bool = True

    def __post_init__(self) -> None:
        if self.type not in OPTION_TYPES:
            raise ValueError(f"option {self.name}: type {self.type!r} not in {OPTION_TYPES}")
        if (self.type == "choice") != bool(self.choices):
            raise ValueError(f"option {self.name}: choices go with type 'choice' only")

    @property
    def flag(self) -> str:
        """The CLI flag (``--boot-time``)."""
        return "--" + self.name.replace("_", "-")

    def required_(self) -> ReaderOption:
        """Return this option, required (for a reader that has no default for it).

        Returns
        -------
        ReaderOption
            A copy with ``required=True``.
        """
        return dataclasses.replace(self, required=True)


#: options several readers share (one flag, one help text)
CLUSTER = ReaderOption("cluster", "name", "cluster name (needed where the input does not say)")
TZ = ReaderOption(
    "tz", "zone", "IANA time zone of local times in the input (e.g. UTC, America/New_York)"
)
NODE = ReaderOption("node", "name", "host name for kernel logs / DCGM scrapes that carry none")


@dataclass(frozen=True)
class ReaderSample:
    """A tiny input of a reader, in the form it documents, for the test matrices.

    Attributes
    ----------
    name : str
        File name to write it under (its suffix may matter: ``health`` reads ``.csv``).
    text : str
        The content (a few lines; at least one record is kept).
    options : mapping of str to object
        The reader options it is read with (Python names, e.g. ``{"cluster": "c"}``).
    """

    name: str
    text: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))


class FileHead:
    """The start of a file as the wrong-kind check sees it (decoded text, its first lines).

    Parameters
    ----------
    text : str
        The decoded start of the file (64 KiB).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        #: the first 50 non-blank lines, stripped
        self.lines = [ln.strip() for ln in text.splitlines() if ln.strip()][:50]
        #: the comma-separated fields of the first line, stripped
        self.header = {f.strip() for f in self.lines[0].split(",")} if self.lines else set()

    @cached_property
    def slurm_format(self) -> str | None:
        """What :func:`reliability.ingest._slurm_text.identify` says the text is."""
        return identify(self.text)

    @cached_property
    def first_record(self) -> object:
        """The first line parsed as JSON (None if it is not JSON or too deeply nested)."""
        try:
            return loads_record(self.lines[0])[0]
        except ValueError:  # (JsonLimitError is a ValueError)
            return None


#: a file-kind signature: the start of a file -> what the file is when it is this reader's
#: input (e.g. ``"a DCGM exporter scrape (Prometheus text)"``), else None
Signature = Callable[[FileHead], "str | None"]


@dataclass(frozen=True)
class ReaderSpec:
    """A reader: its CLI kind, function, options, file signature, tables and sample.

    Attributes
    ----------
    kind : str
        The CLI name (``reliability ingest KIND``, ``reader = "KIND"`` in a pipeline).
    summary : str
        What the files are, in a few words (CLI help, docs).
    options : tuple of ReaderOption
        The reader's keyword options, exactly the keyword-only parameters of ``read`` (checked
        when the function is bound).
    tables : tuple of str
        The canonical tables it fills.
    signature : callable or None
        ``signature(head) -> str | None`` (:class:`FileHead`): what the file is when its start
        is this reader's input, with confidence (None otherwise). Used to refuse a file given
        to another reader, naming this one. None: the reader's inputs have no signature.
    rank : int
        Order in which signatures are tried (lower first): header signatures of CSVs go before
        content signatures (a CSV's text column may quote a kernel log line).
    sample : ReaderSample or None
        A tiny input the test matrices read (and give to every other reader).
    read : callable
        The reader, ``read(path, **options) -> ReadResult``; bound with :meth:`reads` below
        the spec in its module.
    """

    kind: str
    summary: str
    options: tuple[ReaderOption, ...]
    tables: tuple[str, ...]
    signature: Signature | None = None
    rank: int = 50
    sample: ReaderSample | None = None
    read: Callable[..., ReadResult] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.read is not None:
            self._check(self.read)

    def reads(self, fn: Callable[..., ReadResult]) -> Callable[..., ReadResult]:
        """Bind the reader function to this spec (a decorator; once, at import).

        Parameters
        ----------
        fn : callable
            ``read_<source>(path, *, <options>) -> ReadResult``.

        Returns
        -------
        callable
            ``fn`` unchanged.

        Raises
        ------
        TypeError
            If a function is already bound, or the options do not match its keyword-only
            parameters (name, default, required).
        """
        if self.read is not None:
            raise TypeError(f"reader {self.kind!r}: a function is already bound")
        self._check(fn)
        object.__setattr__(self, "read", fn)  # the one late field of a frozen spec
        return fn

    def _check(self, fn: Callable[..., ReadResult]) -> None:
        params = inspect.signature(fn).parameters
        takes = {n: p for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
        declared = {o.name: o for o in self.options}
        if set(takes) != set(declared):
            raise TypeError(
                f"reader {self.kind!r}: options {sorted(declared)} do not match the keyword "
                f"parameters of {fn.__name__} {sorted(takes)}"
            )
        for name, p in takes.items():
            o = declared[name]
            required = p.default is p.empty
            if o.required != required or (not required and o.default != p.default):
                raise TypeError(
                    f"reader {self.kind!r}: option {name} (required={o.required}, "
                    f"default={o.default!r}) does not match {fn.__name__}'s"
                )

    def option(self, name: str) -> ReaderOption | None:
        """Return the option called ``name`` (None when the reader takes no such option).

        Parameters
        ----------
        name : str
            The option's Python name.

        Returns
        -------
        ReaderOption or None
            The option.
        """
        return next((o for o in self.options if o.name == name), None)

    def __call__(self, path: Any, **options: Any) -> ReadResult:
        """Read ``path`` with the bound reader (``READERS[kind](path, ...)``).

        Parameters
        ----------
        path : str or Path
            The input.
        **options
            The reader's options.

        Returns
        -------
        ReadResult
            What the reader returns.
        """
        if self.read is None:
            raise TypeError(f"reader {self.kind!r}: no function bound")
        return self.read(path, **options)
