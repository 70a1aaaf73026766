"""The package imports in layers: no import circle among its modules (issue 44), and no module of the analysis
reaches for another's private names.

Every module of every package pyproject.toml installs (collective, its subpackages, and protocols/ and
dashboards/ as collective.protocols and collective.dashboards) is read with `ast`, and each import statement,
at module level or inside a function, is an edge to the module it names: `import a.b` and `from a import b`
(b a module) to a.b, `from a.b import name` to a.b. Running a package's `__init__` before its submodule is
Python's doing, not the statement's, and is no edge: `collective/__init__.py` would otherwise sit in a circle
with every module it imports.
"""
import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def package_folders() -> dict[str, Path]:
    """Each installed package and its folder, as pyproject.toml lists them."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    moved = setuptools.get("package-dir", {})
    return {name: ROOT / moved.get(name, name.replace(".", "/")) for name in setuptools["packages"]}


def module_files() -> dict[str, Path]:
    """Every module of the installed packages by its dotted name (a package by its own name)."""
    modules = {}
    for package, folder in package_folders().items():
        for path in folder.glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name`'s import statements name (module-level and inside functions)."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]

    def module_of(dotted: str) -> str | None:  # the longest prefix that is a project module
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    named = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            named.update(module_of(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            for alias in node.names:
                named.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else module_of(base))
    return named - {None, name}


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Each strongly connected group of modules (Tarjan 1972): the shortest circle through its first module,
    and the modules of the group."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while node not in group:
                group.add(stack.pop())
            on_stack.difference_update(group)
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [" -> ".join(shortest_circle(min(group), group, graph)) + f" (circles join {len(group)} modules: "
            + ", ".join(sorted(group)) + ")" for group in groups]


def shortest_circle(start: str, group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """The shortest way from `start` back to itself within its strongly connected `group`, breadth first."""
    paths, frontier = {start: [start]}, [start]
    for node in frontier:  # the frontier grows while it is read
        for other in sorted(graph[node] & group):
            if other == start:
                return paths[node] + [start]
            if other not in paths:
                paths[other] = paths[node] + [other]
                frontier.append(other)
    raise AssertionError(f"{start} is in no circle of {sorted(group)}")


def test_the_package_has_no_import_circle():
    modules = module_files()
    assert {"collective.analysis.scores", "collective.protocols.auction", "collective.dashboards.figures"} <= set(modules)
    graph = {name: imports(name, path, modules) for name, path in modules.items()}
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(found)


def test_no_analysis_module_imports_a_private_name_of_another():
    crossing = []
    for name, path in module_files().items():
        if not name.startswith("collective.analysis"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("collective"):
                crossing += [f"{name} imports {node.module}.{alias.name}" for alias in node.names
                             if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert not crossing, "\n".join(crossing)
