"""Fonts for the text matplotlib draws in reports: every character drawn, or replaced and named.

matplotlib's own DejaVu fonts cover Latin, Greek, Cyrillic and many symbols, but job and node
names can be anything (Chinese, Japanese, Korean, emoji); for a character its font lacks,
matplotlib draws an empty box and warns "Glyph missing". It can fall back per glyph along a
list of font families (matplotlib >= 3.6): :func:`drawable` builds that list from the fonts
installed on the machine, found through matplotlib's font manager at report time, and replaces
a character that no font has with U+FFFD, so that the report can say which ones
(:func:`undrawn_note`) instead of drawing a box.

The fallback fonts, in order: the :data:`PREFERRED` families that are installed (Debian's
``fonts-wqy-zenhei`` for Han, kana and Hangul and ``fonts-symbola`` for symbols and emoji in
black and white are what CI installs), then any other installed font that has a character still
missing. Fonts installed after matplotlib built its font cache are found too. Colour emoji fonts
(bitmaps) are no use: matplotlib draws outlines only.

A font with CFF outlines (Noto Sans CJK's ``.ttc``) cannot be embedded in a PDF as Type 42:
matplotlib writes it as a TrueType font, which PDF readers reject or warn about ("Mismatch
between font type and embedded font file"). :attr:`Drawn.type3` says when a text needs one, and
the PDF then embeds its fonts as Type 3, which takes any outline.
"""

from __future__ import annotations

import dataclasses
import os
import unicodedata
from typing import Any, NamedTuple

import matplotlib.font_manager as fm
from matplotlib.font_manager import FontProperties

from reliability._result import fmt_count

__all__ = ["PREFERRED", "REPLACEMENT", "Drawn", "drawable", "prepare_figure", "undrawn_note"]

#: what a character no installed font has prints as
REPLACEMENT = "\ufffd"

#: fallback families tried first, in this order, after the text's own font
PREFERRED = (
    "WenQuanYi Zen Hei",  # Debian fonts-wqy-zenhei: Han, kana, Hangul (TrueType)
    "Droid Sans Fallback",  # Debian fonts-droid-fallback: Han, kana (TrueType)
    "Noto Sans CJK SC",  # Debian fonts-noto-cjk, most desktops: Han, kana, Hangul (CFF)
    "Source Han Sans SC",  # the same design under Adobe's name (CFF)
    "Symbola",  # Debian fonts-symbola: symbols, emoji in black and white (TrueType)
    "Noto Emoji",  # emoji in black and white (TrueType)
    "Noto Sans Symbols 2",
    "Noto Sans Symbols",
)
#: fonts that "have" every character by drawing a box for it (matplotlib ships one)
_BOXES = frozenset({"Last Resort High-Efficiency", "LastResort"})
#: fallback faces are registered under this prefix (see :meth:`_Catalog._register`)
_PREFIX = "reliability fallback: "


class Drawn(NamedTuple):
    """A text made drawable (see :func:`drawable`)."""

    #: the text to draw: characters that no font has are U+FFFD, invisible format characters
    #: (zero-width joiners, variation selectors) that no font has are left out
    text: str
    #: the font families to draw it with, or None when its own font has every character
    family: list[str] | None
    #: the characters replaced by U+FFFD, each once, in order of appearance
    missing: str
    #: whether a character comes from a font with CFF outlines (a PDF must embed Type 3)
    type3: bool


def _open(path: str, index: int) -> Any:
    # a face of a collection other than the first is known to matplotlib >= 3.11 only
    return fm.get_font(fm.FontPath(path, index) if index else path)  # type: ignore[attr-defined]


def _truetype(path: str, index: int) -> bool:
    from fontTools.ttLib import TTFont

    try:
        with TTFont(path, fontNumber=index, lazy=True) as font:
            return "glyf" in font
    except Exception:  # a font fontTools cannot read: treat its outlines as CFF (Type 3 is safe)
        return False


@dataclasses.dataclass(frozen=True)
class _Face:
    family: str  # the name it is registered under
    path: str
    index: int
    truetype: bool

    def has(self, cp: int) -> bool:
        return _open(self.path, self.index).get_char_index(cp) != 0


class _Catalog:
    """The fallback faces of this process, in order; grown as texts need characters."""

    def __init__(self) -> None:
        self.chain: list[_Face] = []
        #: characters no installed font has (after a scan of all of them)
        self.absent: set[int] = set()
        self._ready = False

    def _setup(self) -> None:
        if self._ready:
            return
        self._ready = True
        mgr = fm.fontManager
        # fonts installed after matplotlib cached its font list (it does not look again)
        known = {os.path.realpath(e.fname) for e in mgr.ttflist}
        for path in sorted(fm.findSystemFonts()):
            if os.path.realpath(path) not in known:
                try:
                    mgr.addfont(path)
                except Exception:  # a file FreeType cannot use (bitmap emoji, broken): skipped
                    continue
        for name in PREFERRED:
            entries = [e for e in mgr.ttflist if e.name == name]
            if entries:
                self._register(min(entries, key=_upright_regular))

    def _register(self, entry: Any) -> _Face:
        """Add a face to the chain under a name of its own, at weights 400 and 700.

        matplotlib then finds exactly this face at either weight (without a "Failed to find
        font weight" warning for a font that has one weight only).
        """
        index = getattr(entry, "index", 0)
        family = f"{_PREFIX}{entry.name} [{index}] {entry.fname}"
        for e in self.chain:
            if e.family == family:
                return e
        fm.fontManager.ttflist += [
            dataclasses.replace(entry, name=family, weight=w, style="normal") for w in (400, 700)
        ]
        face = _Face(family, entry.fname, index, _truetype(entry.fname, index))
        self.chain.append(face)
        return face

    def cover(self, cps: set[int]) -> None:
        """Extend the chain with installed faces that have some of ``cps``."""
        self._setup()
        todo = {c for c in cps if c not in self.absent and not any(f.has(c) for f in self.chain)}
        if not todo:
            return
        used = {(f.path, f.index) for f in self.chain}
        faces: dict[tuple[str, int], Any] = {}
        for e in sorted(fm.fontManager.ttflist, key=_upright_regular):
            key = (e.fname, getattr(e, "index", 0))
            if e.name in _BOXES or e.name.startswith(_PREFIX) or key in used:
                continue
            faces.setdefault(key, e)
        for key, e in faces.items():
            try:
                font = _open(*key)
            except Exception:  # a cached font that is gone or unreadable: skipped
                continue
            got = {c for c in todo if font.get_char_index(c)}
            if got:
                self._register(e)
                todo -= got
                if not todo:
                    break
        self.absent |= todo


def _upright_regular(e: Any) -> tuple[Any, ...]:
    w = e.weight
    if isinstance(w, str):
        w = int(w) if w.isdigit() else fm.weight_dict.get(w, 400)
    return (e.style != "normal", abs(int(w) - 400), e.name, e.fname, getattr(e, "index", 0))


_CATALOG = _Catalog()


def _own_fonts(prop: FontProperties) -> list[Any]:
    fonts = []
    for family in prop.get_family():
        one = prop.copy()
        one.set_family(family)
        try:
            fonts.append(fm.get_font(fm.findfont(one, fallback_to_default=False)))
        except ValueError:
            continue
    return fonts or [fm.get_font(fm.findfont(prop))]


def _invisible(c: str) -> bool:
    cp = ord(c)
    return unicodedata.category(c) == "Cf" or 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF


def drawable(s: str, prop: FontProperties) -> Drawn:
    """Make a text drawable: the fonts that have its characters, U+FFFD for the others.

    Parameters
    ----------
    s : str
        The text, e.g. a job name from the logs.
    prop : matplotlib.font_manager.FontProperties
        The font it is drawn in (family, weight).

    Returns
    -------
    Drawn
        The text to draw, the family list to draw it with (its own font first, then the
        fallback faces it needs, matplotlib falling back per glyph), the characters replaced and
        whether a face with CFF outlines is needed.
    """
    if s.isascii() and s.isprintable():  # every font has these
        return Drawn(s, None, "", False)
    own = _own_fonts(prop)
    need = {ord(c) for c in set(s) if c != "\n" and not any(f.get_char_index(ord(c)) for f in own)}
    if not need:
        return Drawn(s, None, "", False)
    _CATALOG.cover(need)
    out: list[str] = []
    missing: dict[str, None] = {}
    used: set[_Face] = set()
    for c in s:
        if ord(c) not in need:
            out.append(c)
            continue
        face = next((f for f in _CATALOG.chain if f.has(ord(c))), None)
        if face is not None:
            used.add(face)
            out.append(c)
        elif not _invisible(c):
            missing[c] = None
            out.append(REPLACEMENT)
    family = [*prop.get_family(), *(f.family for f in _CATALOG.chain if f in used)]
    return Drawn(
        "".join(out),
        family if used else None,
        "".join(missing),
        any(not f.truetype for f in used),
    )


def prepare_figure(fig: Any) -> str:
    """Make a figure's text safe to draw: plain text, fonts that have it, U+FFFD for the rest.

    Every text of the figure (titles, labels, tick labels, legends, annotations) is drawn as it
    is, never as mathtext (a ``$`` in a job name is a dollar sign), in a family list that has
    its characters (:func:`drawable`). Calling it again changes nothing.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, drawn but not yet rendered.

    Returns
    -------
    str
        The characters no font has (printed as U+FFFD), each once; also kept as
        ``fig.reliability_undrawn``.
    """
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    missing = dict.fromkeys(getattr(fig, "reliability_undrawn", ""))
    for t in fig.findobj(Text):
        t.set_parse_math(False)
        s = t.get_text()
        if not s:
            continue
        d = drawable(s, t.get_fontproperties())
        if d.text != s:
            t.set_text(d.text)
        if d.family:
            t.set_fontfamily(d.family)
        missing.update(dict.fromkeys(d.missing))
    # tick labels from names: their formatter sets them again when the figure is drawn
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = axis.get_ticklabels()
            prop = labels[0].get_fontproperties() if labels else FontProperties()
            f = axis.get_major_formatter()
            if isinstance(f, FixedFormatter):
                f.seq = [drawable(str(v), prop).text for v in f.seq]
            elif isinstance(f, FuncFormatter) and not hasattr(f.func, "reliability_drawable"):
                f.func = _drawn(f.func, prop)
    fig.reliability_undrawn = "".join(missing)
    return fig.reliability_undrawn


def _drawn(func: Any, prop: FontProperties) -> Any:
    """Wrap a tick formatter's function: its labels drawable (set_ticks(labels) makes one)."""

    def drawn(x: float, pos: int | None = None) -> str:
        return drawable(str(func(x, pos)), prop).text

    drawn.reliability_drawable = True  # type: ignore[attr-defined]
    return drawn


def undrawn_note(chars: str, most: int = 12) -> str | None:
    """Say which characters a PDF could not draw, or None when it drew them all.

    Parameters
    ----------
    chars : str
        The characters no font had, each once.
    most : int
        Most characters named; the rest are counted.

    Returns
    -------
    str or None
        E.g. "1 character could not be drawn in the PDF: U+1F680 ROCKET. ..."
    """
    if not chars:
        return None
    names = [f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip() for c in chars[:most]]
    more = f" and {len(chars) - most:,} more" if len(chars) > most else ""
    return (
        f"{fmt_count(len(chars), 'character')} could not be drawn in the PDF: "
        f"{', '.join(names)}{more}. No font on this machine has "
        f"{'it' if len(chars) == 1 else 'them'}, so {REPLACEMENT} stands in; the data files (and "
        "the HTML report) keep the text as it is. Debian's fonts-wqy-zenhei (Chinese, Japanese, "
        "Korean) and fonts-symbola (symbols, emoji in black and white) draw most."
    )
