"""Data flows one way (DESIGN.md §2): raw logs -> ingest -> Dataset -> attribution -> models ->
plots -> report; the simulators write raw logs and truth, and only experiments compare models
with that truth. Checked on the source with ``ast``: every import statement counts, at module
level or inside a function, under ``TYPE_CHECKING`` or not (a type-only import of a higher layer
is still a dependency on it)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "reliability"

#: layer -> the module prefixes that belong to it (longest prefix wins)
LAYERS = {
    "foundation": ["reliability._version", "reliability.errors", "reliability._atomic",
                   "reliability.schema", "reliability.taxonomy", "reliability.topology",
                   "reliability.references", "reliability.fleets", "reliability.reasons", "reliability._result",
                   "reliability._result_io", "reliability.hostlist",
                   "reliability.hostlist_codes"],
    "ingest": ["reliability.ingest"],
    "store": ["reliability.store", "reliability.parallel"],
    "simulated": ["reliability.simulated"],
    "attribution": ["reliability.attribution"],
    "models": ["reliability.models"],
    "analyses": ["reliability.analyses"],
    "sim": ["reliability.sim"],
    "experiments": ["reliability.experiments"],
    "plots": ["reliability.plots"],
    "report": ["reliability.report"],
    "sweep": ["reliability.sweep"],
    "orchestration": ["reliability.pipeline", "reliability.datasets", "reliability.collect",
                      "reliability.testing"],
    "cli": ["reliability.cli", "reliability.__main__"],
}  # fmt: skip
_ABOVE_MODELS = {"plots", "report", "sweep", "orchestration", "cli"}
#: layer -> layers it must not import
FORBIDDEN = {
    "foundation": set(LAYERS) - {"foundation"},
    "ingest": set(LAYERS) - {"foundation", "ingest"},
    "store": set(LAYERS) - {"foundation", "ingest", "store"},
    # reads what a simulator wrote; never the simulator itself
    "simulated": {"sim", "experiments", "attribution", "models", "analyses", *_ABOVE_MODELS},
    "attribution": {"sim", "experiments", "simulated", "models", "analyses", *_ABOVE_MODELS},
    # models fit data: no simulator, no ground truth, nothing above them
    "models": {"sim", "experiments", "simulated", "analyses", *_ABOVE_MODELS},
    # composite library calls over a Dataset: the models composed, no simulator, no report
    "analyses": {"sim", "experiments", "simulated", *_ABOVE_MODELS},
    # the simulator makes data: it knows nothing of the Dataset, the models or the reports
    "sim": {"store", "simulated", "attribution", "models", "analyses", "experiments", *_ABOVE_MODELS},
    # experiments run simulators and models; nothing below the front ends uses them
    "experiments": {"plots", "report", "sweep", "cli"},
    "plots": {"sim", "experiments", "simulated", "store", "ingest", "analyses", "report", "sweep",
              "orchestration", "cli"},
    # the report reads a sweep's stored results (not its runs)
    "report": {"sim", "experiments", "simulated", "orchestration", "cli"},
    "sweep": {"report", "cli"},
    "orchestration": {"cli"},
    "cli": set(),
}  # fmt: skip


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").is_file() or (PKG.parent / rel).is_dir()


def _imports(path: Path) -> set[str]:
    """Modules of the package that ``path`` imports (``from pkg import mod`` -> ``pkg.mod``)."""
    return _imports_of(
        path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py"
    )


def _imports_of(source: str, me: str, is_package: bool = False) -> set[str]:
    package = me if is_package else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("reliability")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if not base.startswith("reliability"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if _is_module(sub) else base)
    out.discard(me)
    return out


def _layer(module: str) -> str | None:
    best = None
    for layer, prefixes in LAYERS.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (
                best is None or len(p) > len(best[1])
            ):
                best = (layer, p)
    return best[0] if best else None


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in sorted(PKG.rglob("*.py"))}


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in _graph() if m != "reliability" and _layer(m) is None)
    assert not unplaced, f"add these modules to a layer in tests/test_layers.py: {unplaced}"


def test_imports_follow_the_layers():
    violations = []
    for module, imports in _graph().items():
        layer = _layer(module)
        if layer is None:
            continue
        for target in sorted(imports):
            other = _layer(target)
            if target == "reliability":
                # the package root re-exports the whole public API: only the front ends may use it
                if layer not in ("orchestration", "cli"):
                    violations.append(f"{module} ({layer}) imports the package root")
            elif other in FORBIDDEN[layer]:
                violations.append(f"{module} ({layer}) imports {target} ({other})")
    assert not violations, "\n".join(violations)


def _cycles(graph: dict[str, set[str]], within: str) -> list[list[str]]:
    nodes = {m for m in graph if m.startswith(within)}
    found, state, stack = [], dict.fromkeys(nodes, 0), []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m] & nodes):
            if state[t] == 1:
                found.append([*stack[stack.index(t) :], t])
            elif state[t] == 0:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(nodes):
        if state[m] == 0:
            visit(m)
    return found


def test_no_import_cycles_anywhere():
    """No module imports one that imports it back, anywhere in the package: at module level,
    lazily in a function or only for types under ``TYPE_CHECKING`` (a type-only import is still
    a dependency: the two modules cannot be read, moved or tested apart). Cycles broken so far:
    the simulator's run and emit; the pipeline's config and analysis, runner and background
    stages; the sacct reader and its mapped fast path (the fast path names a ``RecordSink``
    protocol); the store's Dataset and its integrity and summary modules (they name the
    ``DatasetView`` protocol). A package's ``__init__`` (its public face, re-exporting its
    modules) is not counted as a module here."""
    graph = {m: {t for t in ts if not _is_package_root(t)} for m, ts in _graph().items()}
    cycles = _cycles(graph, "reliability.")
    assert not cycles, cycles


def test_the_store_uses_the_public_face_of_ingest():
    """The store imports from ``reliability.ingest`` only its public API (the package and
    :mod:`reliability.ingest.shared`), never a reader's private module."""
    public = {"reliability.ingest", "reliability.ingest.shared"}
    bad = sorted(
        f"{module} imports {target}"
        for module, imports in _graph().items()
        if _layer(module) == "store"
        for target in imports
        if _layer(target) == "ingest" and target not in public
    )
    assert not bad, bad


def _is_package_root(module: str) -> bool:
    return (PKG.parent / Path(*module.split("."))).is_dir()


def test_the_checker_sees_violations():
    """The checker itself: a type-only import, a lazy import inside a function, a relative
    import and ``import a.b`` are all seen, and a model importing the simulator is a violation."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from reliability.store import Dataset\n"
        "def f():\n    from reliability.sim import run\n    import reliability.report.html\n"
        "from .mttf import fit_mttf\nfrom ..sim.config import CAUSES\n"
    )
    got = _imports_of(source, "reliability.models.fake")
    assert got == {"reliability.store", "reliability.sim.run", "reliability.report.html",
                   "reliability.models.mttf", "reliability.sim.config"}  # fmt: skip
    layers = {_layer(m) for m in got}
    assert layers & FORBIDDEN["models"] == {"sim", "report"}
    assert _layer("reliability.experiments.backtests") == "experiments"
    assert _layer("reliability.sim.cluster") == "sim"
    assert _cycles({"a.x": {"a.y"}, "a.y": {"a.x"}, "a.z": set()}, "a.") == [["a.x", "a.y", "a.x"]]
