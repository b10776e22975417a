"""No import cycle in app/, and nothing of the suite imported by the benchmarks or the testbed:
every import, at the top of a module or inside a function, read from the source, so neither
can hide behind a lazy import."""
from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = APP) -> dict[str, set[str]]:
    """Module → the modules of app/ it imports (`from a.b import c` is a.b.c when c is a
    module, else a.b)."""
    modules = {_module_name(root, path): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                    + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            else:
                continue
            graph[name].update(target for target in targets
                               if target in modules and target != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as the modules along it, or None."""
    state: dict[str, str] = {}
    trail: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        trail.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return trail[trail.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[module] = "done"
        trail.pop()
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def test_app_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " → ".join(cycle)


def test_a_cycle_is_found(tmp_path):
    package = tmp_path / "app"
    (package / "services").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "services" / "__init__.py").write_text("")
    (package / "db.py").write_text("def later():\n    from app.services import events\n")
    (package / "services" / "events.py").write_text("from app.db import later\n")
    assert find_cycle(import_graph(package)) == ["app.db", "app.services.events", "app.db"]


def imported_packages(folder: Path) -> dict[str, set[str]]:
    """File → the top-level names it imports, at the top or inside a function."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.partition(".")[0])
        found[path.relative_to(folder.parent).as_posix()] = names
    return found


def test_the_benchmarks_and_the_testbed_import_nothing_of_the_suite():
    """bench/ stands on testbed/ and the app; testbed/ on the app alone. A bench script runs
    from bench/, which it imports by module name (`harness`): as `bench.harness` it would load
    a second copy of the same module."""
    borrowed = {path: sorted(names & {"tests", "bench"}) for path, names in
                imported_packages(APP.parent / "bench").items()}
    borrowed.update({path: sorted(names & {"tests", "bench"}) for path, names in
                     imported_packages(APP.parent / "testbed").items()})
    assert {path: names for path, names in borrowed.items() if names} == {}


def test_a_borrowed_module_is_found(tmp_path):
    (tmp_path / "run.py").write_text("def later():\n    from tests.conftest import make_tenant\n")
    assert imported_packages(tmp_path)[f"{tmp_path.name}/run.py"] == {"tests"}
