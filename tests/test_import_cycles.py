"""No import circle anywhere: the graph of every import statement in every shipped module (inside
functions too, as grimp reads them) has no strongly connected component of more than one module.
A circle is what makes a module unreadable alone and an import order matter."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "bench", "engine", "dlm_kernels", "reference", "sessions", "sprout", "training", "visualizer",
            "world")


def import_circles(*packages: str) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    graph = grimp.build_graph(*packages, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_shipped_module_imports_in_a_circle(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    assert import_circles(*PACKAGES) == []


def test_a_circle_is_found(tmp_path, monkeypatch):
    package = tmp_path / "loop"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import loop.b\n")
    (package / "b.py").write_text("def f():\n    from loop import c  # inside a function still counts\n")
    (package / "c.py").write_text("from loop.a import x\n")
    (package / "d.py").write_text("import loop.a\n")              # imports into the circle, not part of it
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "loop", raising=False)
    assert import_circles("loop") == [["loop.a", "loop.b", "loop.c"]]
