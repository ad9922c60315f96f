"""Every public function of ``reliability/`` documents its arguments and its return value.

ruff's ``D`` rules (numpy convention, see ``pyproject.toml``) check the docstrings' form; they do
not check that a function with arguments has a ``Parameters`` section naming them, nor that a
function returning a value has a ``Returns`` section. This test reads the source with :mod:`ast`
(it imports nothing from the package) and checks that, for:

- every public module-level function (name without a leading underscore), and
- every public method (no leading underscore) of a public module-level class,

in every module under ``reliability/`` (private modules included: their public functions are
imported by the public ones and are read by contributors):

- each argument other than ``self``/``cls`` is named in a numpydoc ``Parameters`` section
  (``a, b : float`` groups allowed; ``*args``/``**kwargs`` may be written with or without stars),
  and the section names no argument the function does not have;
- a function with a ``return <value>`` (``return None`` does not count) has ``Returns`` (or
  ``Yields``); a generator (``yield``) has ``Yields`` (or ``Returns``).

Properties are exempt from both (numpydoc documents a property as the attribute it is); property
setters and ``typing.overload`` stubs are skipped. A public class with an explicit ``__init__``
taking arguments documents them in the class docstring's ``Parameters`` (numpydoc's place for
them; ruff's D107 is ignored for that reason).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reliability"

# Modules whose docstrings the lead is still writing (code still changing); empty this when done.
PENDING: tuple[str, ...] = ()

_HEADER = re.compile(r"^([A-Z][A-Za-z ]+)\n-{3,}\s*$", re.MULTILINE)
_ENTRY = re.compile(
    r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*\*{0,2}[A-Za-z_][A-Za-z0-9_]*)*)\s*(?::|$)"
)


def sections(doc: str) -> dict[str, str]:
    """Split a (cleaned) numpydoc docstring into ``{heading: body}``."""
    heads = list(_HEADER.finditer(doc))
    out = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(doc)
        out[m.group(1).strip()] = doc[m.end() : end]
    return out


def documented_names(body: str) -> set[str]:
    """Names on the unindented entry lines of a ``Parameters`` section, stars stripped."""
    names = set()
    for line in body.splitlines():
        if not line or line[0].isspace():
            continue
        m = _ENTRY.match(line)
        if m:
            names.update(n.strip().lstrip("*") for n in m.group(1).split(","))
    return names


def _decorators(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    out = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        out.add(ast.unparse(d))
    return out


def _own_nodes(fn: ast.AST):
    """Nodes of ``fn``'s body, not descending into nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _returns_value(fn) -> bool:
    return any(
        isinstance(n, ast.Return)
        and n.value is not None
        and not (isinstance(n.value, ast.Constant) and n.value.value is None)
        for n in _own_nodes(fn)
    )


def _yields(fn) -> bool:
    return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(fn))


def _arguments(fn, is_method: bool) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if (
        is_method
        and "staticmethod" not in _decorators(fn)
        and names
        and names[0] in ("self", "cls")
    ):
        names = names[1:]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def public_functions(tree: ast.Module):
    """``(qualname, node, is_method)`` for the public functions the rules above apply to."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_"):
                yield node.name, node, False
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(
                    item, ast.FunctionDef | ast.AsyncFunctionDef
                ) and not item.name.startswith("_"):
                    yield f"{node.name}.{item.name}", item, True


def problems(fn, is_method: bool) -> list[str]:
    """What ``fn``'s docstring lacks; empty when it is complete."""
    decos = _decorators(fn)
    if "overload" in decos or "typing.overload" in decos:
        return []
    if any(d.endswith((".setter", ".deleter")) for d in decos):
        return []
    if {"property", "functools.cached_property", "cached_property"} & decos:
        return []
    doc = ast.get_docstring(fn)
    if doc is None:
        return ["no docstring"]
    secs = sections(inspect.cleandoc(doc))
    out = []
    args = _arguments(fn, is_method)
    if args:
        if "Parameters" not in secs:
            out.append("no Parameters section (arguments: " + ", ".join(args) + ")")
        else:
            named = documented_names(secs["Parameters"])
            missing = [a for a in args if a not in named]
            extra = sorted(named - set(args))
            if missing:
                out.append("Parameters does not name: " + ", ".join(missing))
            if extra:
                out.append("Parameters names arguments it does not have: " + ", ".join(extra))
    if (_returns_value(fn) or _yields(fn)) and not ({"Returns", "Yields"} & secs.keys()):
        out.append("returns a value but has no Returns/Yields section")
    return out


def class_problems(cls: ast.ClassDef) -> list[str]:
    """What a public class's docstring lacks for its ``__init__`` arguments."""
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    args = _arguments(init, True) if init is not None else []
    if not args:
        return []
    doc = ast.get_docstring(cls)
    if doc is None:
        return ["no docstring"]
    secs = sections(inspect.cleandoc(doc))
    if "Parameters" not in secs:
        return ["no Parameters section for __init__ (arguments: " + ", ".join(args) + ")"]
    missing = [a for a in args if a not in documented_names(secs["Parameters"])]
    return (
        ["Parameters does not name __init__ argument(s): " + ", ".join(missing)] if missing else []
    )


def _modules() -> list[Path]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(PENDING):
            out.append(path)
    return out


def test_public_functions_document_parameters_and_returns():
    found = []
    checked = 0
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(ROOT).as_posix()
        for qualname, fn, is_method in public_functions(tree):
            checked += 1
            for p in problems(fn, is_method):
                found.append(f"{rel}:{fn.lineno}: {qualname}: {p}")
        for cls in tree.body:
            if isinstance(cls, ast.ClassDef) and not cls.name.startswith("_"):
                found += [f"{rel}:{cls.lineno}: {cls.name}: {p}" for p in class_problems(cls)]
    assert checked > 100, f"only {checked} public functions found under {PACKAGE}: wrong root?"
    assert not found, f"{len(found)} docstring problem(s):\n" + "\n".join(found)


# -- the checker itself, against docstrings written here ----------------------------------------

_GOOD = '''
def f(a, b, *args, c=1, **kwargs):
    """Do it.

    Parameters
    ----------
    a, b : float
        Two numbers [h].
    *args : int
        More.
    c : int
        A count.
    **kwargs
        Passed on.

    Returns
    -------
    float
        The sum [h].
    """
    return a + b
'''


def _check(src: str) -> list[str]:
    tree = ast.parse(src)
    found = [p for _, fn, m in public_functions(tree) for p in problems(fn, m)]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")]
    return found + [p for c in classes for p in class_problems(c)]


def test_checker_accepts_a_complete_docstring():
    assert _check(_GOOD) == []


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        (_GOOD.replace("    a, b : float\n", "    a : float\n"), "does not name: b"),
        (_GOOD.replace("    c : int\n        A count.\n", ""), "does not name: c"),
        (_GOOD.replace("    **kwargs\n        Passed on.\n", ""), "does not name: kwargs"),
        (_GOOD.replace("a, b : float", "a, b, d : float"), "does not have: d"),
        (_GOOD.replace("Returns\n    -------", "Notes\n    -----"), "no Returns"),
        ("def g(x):\n    return x\n", "no docstring"),
        ('def g(x):\n    """Do it."""\n', "no Parameters section (arguments: x)"),
        (
            'class C:\n    def m(self, y):\n        """Do it."""\n        return y\n',
            "no Parameters section (arguments: y)",
        ),
        ('def g():\n    """Do it."""\n    yield 1\n', "no Returns/Yields"),
        (
            'class C:\n    """A C."""\n    def __init__(self, n):\n        self.n = n\n',
            "no Parameters section for __init__ (arguments: n)",
        ),
    ],
)
def test_checker_reports_what_is_missing(src, expected):
    found = _check(src)
    assert any(expected in p for p in found), found


@pytest.mark.parametrize(
    "src",
    [
        "def _private(x):\n    return x\n",
        'def g():\n    """Do it."""\n    return None\n',
        'def g():\n    """Do it."""\n    def inner():\n        return 1\n    inner()\n',
        'class C:\n    @property\n    def p(self):\n        """The p [h]."""\n        return 1\n',
        "class _C:\n    def m(self, y):\n        return y\n",
        'def outer():\n    """Do it."""\n    def nested(y):\n        return y\n    nested(1)\n',
    ],
)
def test_checker_exempts(src):
    assert _check(src) == []
