"""docs/architecture.md's module table lists every module, and the package keeps its shape: adapters never import
each other and no module imports back into a cycle."""

from __future__ import annotations

import ast
import re

from tests.helpers import ROOT

PACKAGE = ROOT / "gitwiki"
ADAPTERS = ("gitwiki.commands", "gitwiki.mcp_server", "gitwiki.cli")


def _modules() -> dict[str, ast.Module]:
    out = {}
    for file in PACKAGE.rglob("*.py"):
        rel = file.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = ast.parse(file.read_text())
    return out


def _imports(tree: ast.Module) -> set[str]:
    """Every gitwiki module a module imports, at the top or inside a function (a call-time import is still one)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gitwiki"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gitwiki"))
    return found


def test_every_module_is_in_the_architecture_table():
    listed = set()
    for cell in re.findall(r"^\| (`[^|]+`) \|", (ROOT / "docs/architecture.md").read_text(), re.M):
        listed.update(re.findall(r"`([\w/.*]+)\.py`", cell))
    modules = {
        file.relative_to(PACKAGE).with_suffix("").as_posix()
        for file in PACKAGE.rglob("*.py")
        if file.name not in ("__init__.py", "__main__.py") and file.parent.name != "commands"
    }
    missing = {m for m in modules if m not in listed and m.rsplit("/", 1)[0] + "/*" not in listed}
    assert not missing, f"modules missing from docs/architecture.md's table: {sorted(missing)}"
    stale = {m for m in listed if "*" not in m and m not in modules}
    assert not stale, f"docs/architecture.md lists modules that do not exist: {sorted(stale)}"


def test_no_adapter_imports_another_adapter():
    modules = _modules()
    for name, tree in modules.items():
        if not name.startswith(ADAPTERS) or name in ("gitwiki.commands", "gitwiki.commands.options"):
            continue
        for target in _imports(tree):
            if target not in modules or target == name:
                continue
            if target.startswith(ADAPTERS) and target not in ("gitwiki.commands", "gitwiki.commands.options"):
                # the CLI builds its parser from the command modules, and `serve` starts the MCP adapter
                allowed = name == "gitwiki.cli" or (name, target) == ("gitwiki.commands.serve", "gitwiki.mcp_server")
                assert allowed, f"{name} imports the adapter {target}"


def test_the_import_graph_has_no_cycle():
    modules = _modules()
    graph = {name: {t for t in _imports(tree) if t in modules and t != name} for name, tree in modules.items()}
    # a package's __init__ re-exporting its children is not a cycle of concepts
    graph = {n: {t for t in ts if not n.startswith(t + ".") and not t.startswith(n + ".")} for n, ts in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
