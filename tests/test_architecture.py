"""The module tables of docs/architecture-modules*.md list every module, and the package keeps its shape: the adapters are found
from what they do (not from a list), import each other only at the CROSSINGS listed and never a private name, the
library never imports them, and no module imports back into a cycle. The tests keep that shape: a test folder per
layer, and no test module imported by another."""

from __future__ import annotations

import ast
import functools
import re
import tomllib

from markdown_it import MarkdownIt

from tests.helpers import ROOT

PACKAGE = ROOT / "gitwiki"
# what makes a module an adapter: it builds a CLI parser or speaks MCP through the SDK ...
ADAPTER_IMPORTS = {"argparse", "mcp", "mcp_types"}
# ... or speaks a wire protocol itself (JSON-RPC before the SDK is loaded, a listening socket)
PROTOCOL_MARKS = ("jsonrpc", "listen")
# the adapters, one family each, by the folder they live in; a family may import its own members
FAMILIES = {"cli": "cli", "commands": "cli", "__main__": "cli", "agent_hooks": "hooks", "mcp": "mcp", "serve": "serve"}
# the only imports from one adapter family into another, and why
CROSSINGS = {
    ("cli", "hooks"): "`gitwiki hook TYPE` runs the hook code and `gitwiki hooks` installs it",
    ("cli", "mcp"): "`gitwiki serve` starts the MCP server",
    ("cli", "serve"): "`gitwiki serve` starts the socket beside it, and `gitwiki ground` asks it first",
    ("hooks", "serve"): "a hook that searches asks the checkout's running owner first, as `gitwiki ground` does",
    ("serve", "hooks"): "the owner answers a hook that `gitwiki-hook` sends it with the hook's own handler",
    ("mcp", "serve"): "a bridge to the owner checks who is at the socket's other end as the socket's ends do",
}


@functools.cache  # parsed once per run: six tests walk the same trees and none changes them
def _modules() -> dict[str, ast.Module]:
    out = {}
    for file in PACKAGE.rglob("*.py"):
        rel = file.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = ast.parse(file.read_text())
    return out


@functools.cache  # by tree (a node hashes by identity): each test asks again of the same trees
def _imports(tree: ast.Module) -> frozenset[str]:
    """Every gitwiki module a module imports, at the top or inside a function (a call-time import is still one)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gitwiki"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gitwiki"))
    return frozenset(found)


@functools.cache  # by tree (a node hashes by identity): each test asks again of the same trees
def _external(tree: ast.Module) -> frozenset[str]:
    """The top-level names of the packages a module imports."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return frozenset(found)


@functools.cache  # by tree (a node hashes by identity): each test asks again of the same trees
def _speaks_a_protocol(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == PROTOCOL_MARKS[0]:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == PROTOCOL_MARKS[1]:
            return True
    return False


def _entry_points() -> set[str]:
    """The commands' modules (what each plain script pyproject installs imports its `main` from), and every
    `__main__`; an entry point's package is an adapter as a whole."""
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    found = {
        node.module
        for source in wheel["shared-scripts"]
        for node in ast.walk(ast.parse((ROOT / source).read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert found == {"gitwiki.cli", "gitwiki.agent_hooks.__main__"}, found
    found.update(".".join(f.relative_to(ROOT).with_suffix("").parts) for f in PACKAGE.rglob("__main__.py"))
    return found


def _family(name: str) -> str | None:
    return FAMILIES.get(name.split(".")[1] if "." in name else name)


def _adapters(modules: dict[str, ast.Module]) -> dict[str, str]:
    """Each adapter module and its family, found from its imports, its protocol and the entry points; the folder of
    an adapter is an adapter as a whole (the layout shows the layers)."""
    entries = _entry_points()
    packages = {e.removesuffix(".__main__") for e in entries if e.endswith(".__main__") and e != "gitwiki.__main__"}
    found = {}
    for name, tree in modules.items():
        if (
            _external(tree) & ADAPTER_IMPORTS
            or _speaks_a_protocol(tree)
            or name in entries
            or any(name == p or name.startswith(p + ".") for p in packages)
        ):
            family = _family(name)
            assert family, f"{name} is an adapter (it imports argparse or the MCP SDK, speaks a protocol or is an "
            "entry point) in no family: add it to FAMILIES"
            found[name] = family
    # a folder holding an adapter (gitwiki.mcp, gitwiki.serve, gitwiki.commands …) holds nothing else
    folders = {name.rsplit(".", 1)[0] for name in found if name.count(".") > 1}
    for name in modules:
        folder = name if name in folders else name.rsplit(".", 1)[0]
        if folder in folders and name not in found:
            found[name] = _family(name) or ""
    return found


MODULE_PAGES = ("docs/architecture-modules.md", "docs/architecture-modules-adapters.md")  # one table each


def _architecture_table() -> list[list[str]]:
    """The rows of the module tables of MODULE_PAGES (each page's table under "## Modules"), as markdown renders
    them."""
    return [row for page in MODULE_PAGES for row in _module_table(page)]


def _module_table(page: str) -> list[list[str]]:
    tokens = MarkdownIt("commonmark").enable("table").parse((ROOT / page).read_text())
    rows: list[list[str]] = []
    section, tables, row = "", 0, None
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[i + 1].content
        elif section == "Modules" and token.type == "table_open":
            tables += 1
        elif section == "Modules" and token.type == "tr_open":
            row = []
        elif section == "Modules" and token.type == "inline" and row is not None:
            row.append(token.content)
        elif section == "Modules" and token.type == "tr_close" and row is not None:
            rows.append(row)
            row = None
        elif section == "Modules" and token.type == "paragraph_open" and tokens[i + 1].content.startswith("|"):
            raise AssertionError(f"{page}: a table row renders as text: {tokens[i + 1].content[:60]!r}")
    assert tables == 1, f"{page}'s module table renders as {tables} tables"
    return rows[1:]


def test_the_architecture_table_renders_as_one_table():
    rows = _architecture_table()
    assert rows and all(len(r) == 3 for r in rows), "each module row has a module, its concept and its path"


def test_the_table_says_how_a_command_module_looks():
    cell = next(concept for module, concept, _ in _architecture_table() if "commands/*.py" in module)
    assert "`register(subparsers)`" in cell
    for file in (PACKAGE / "commands").glob("*.py"):
        if file.stem not in ("__init__", "options"):
            tree = ast.parse(file.read_text())
            assert any(isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body), file.name


def test_every_module_is_in_the_architecture_table():
    listed = set()
    for cell, _concept, _path in _architecture_table():
        listed.update(re.findall(r"`([\w/.*]+)\.py`", cell))
    modules = {
        file.relative_to(PACKAGE).with_suffix("").as_posix()
        for file in PACKAGE.rglob("*.py")
        if file.name not in ("__init__.py", "__main__.py") and file.parent.name != "commands"
    }
    missing = {m for m in modules if m not in listed and m.rsplit("/", 1)[0] + "/*" not in listed}
    assert not missing, f"modules missing from the tables of {MODULE_PAGES}: {sorted(missing)}"
    stale = {m for m in listed if "*" not in m and m not in modules}
    assert not stale, f"{MODULE_PAGES} list modules that do not exist: {sorted(stale)}"


def test_the_adapters_are_found_without_a_list():
    adapters = _adapters(_modules())
    for name in (
        "gitwiki.cli",
        "gitwiki.commands.ground",
        "gitwiki.mcp.server",
        "gitwiki.mcp.lance",
        "gitwiki.mcp.memory",
        "gitwiki.mcp.early",
        "gitwiki.serve.server",
        "gitwiki.serve.client",
        "gitwiki.agent_hooks.run",
    ):
        assert name in adapters, f"{name} is not found as an adapter"
    for name in ("gitwiki.wiki", "gitwiki.search.searcher", "gitwiki.index.store", "gitwiki.memory.store"):
        assert name not in adapters, f"{name} is library, found as an adapter"


def test_no_adapter_imports_another_adapter():
    modules = _modules()
    adapters = _adapters(modules)
    for name, family in adapters.items():
        for target in _imports(modules[name]):
            other = adapters.get(target)
            if other and other != family:
                assert (family, other) in CROSSINGS, f"{name} imports the adapter {target}"


def test_the_library_never_imports_an_adapter():
    modules = _modules()
    adapters = _adapters(modules)
    for name, tree in modules.items():
        if name not in adapters:
            upward = sorted(t for t in _imports(tree) if t in adapters)
            assert not upward, f"the library module {name} imports the adapters {upward}"


def test_no_module_uses_a_private_name_of_another():
    """A leading underscore is a module's own business: adapters use the library's public names, and so does
    the library itself."""
    modules = _modules()
    for name, tree in modules.items():
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gitwiki"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in modules:
                        aliases[a.asname or a.name] = full
                    private = a.name.startswith("_") and not a.name.startswith("__")
                    assert not private or node.module == name, f"{name} imports {node.module}.{a.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                private = node.attr.startswith("_") and not node.attr.startswith("__")
                assert not private, f"{name} uses {aliases[node.value.id]}.{node.attr}"


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


# The top of the package: the front door, the CLI's entry and what every layer uses; the rest sits in the folder of
# its concept (docs/architecture.md, "Layout")
TOP = {"__init__", "__main__", "cli", "config", "config_edit", "errors", "fs", "native", "pagetext", "trust", "wiki"}
LAYERS = {
    "git",
    "pages",
    "index",
    "search",
    "sources",
    "operations",
    "memory",
    "markdown",
    "lint",
    "commands",
    "mcp",
    "serve",
    "agent_hooks",
}


def _room(name: str) -> str:
    """A module's place in the layout: its folder under gitwiki/, or itself at the top."""
    return name.split(".")[1] if name.count(".") >= 1 else name


def test_the_layout_shows_the_layers():
    flat = {f.stem for f in PACKAGE.glob("*.py")}
    assert flat == TOP, f"modules at the top of gitwiki/ outside the front door: {sorted(flat - TOP)}"
    folders = {d.name for d in PACKAGE.iterdir() if d.is_dir() and (d / "__init__.py").exists()}
    assert folders == LAYERS, f"folders that are no layer of docs/architecture.md: {sorted(folders ^ LAYERS)}"


def test_the_folders_import_one_another_in_one_direction():
    """No two folders (or top modules) import each other, however far round: the layers stack."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, tree in modules.items():
        for target in _imports(tree):
            if target in modules and target != "gitwiki" and name != "gitwiki" and _room(target) != _room(name):
                graph.setdefault(_room(name), set()).add(_room(target))
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError("folders importing round: " + " -> ".join([*path[path.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])


# ---- the tests mirror the layers ------------------------------------------------------------------------------

TESTS = ROOT / "tests"


def _test_files() -> list:
    """Every Python file of the test suite (the vendored docs sites under tests/sites are data)."""
    return [f for f in TESTS.rglob("*.py") if "sites" not in f.relative_to(TESTS).parts[:1]]


def _is_test_module(name: str) -> bool:
    """A module pytest collects or loads by itself: a `test_*` file or a conftest."""
    last = name.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def test_every_layer_has_its_test_folder():
    """tests/<folder>/ holds the tests of gitwiki/<folder>/; tests/ itself the top modules' and whole-tool tests."""
    missing = sorted(
        layer
        for layer in LAYERS
        if not any((TESTS / layer).glob("test_*.py")) or not (TESTS / layer / "__init__.py").exists()
    )
    assert not missing, f"layers without a test folder (tests/<folder>/__init__.py and test_*.py): {missing}"


def test_a_test_named_after_a_module_of_a_folder_lives_in_that_folder():
    modules = {f.stem: f.parent.relative_to(PACKAGE).parts[0] for f in PACKAGE.glob("*/**/*.py")}
    misplaced = {
        f.name: f"tests/{modules[f.stem.removeprefix('test_')]}/"
        for f in TESTS.glob("test_*.py")
        if not (PACKAGE / f"{f.stem.removeprefix('test_')}.py").exists() and f.stem.removeprefix("test_") in modules
    }
    assert not misplaced, f"flat tests of a folder's module, and where they belong: {misplaced}"


def test_no_test_module_imports_another():
    """Shared fixtures live in a conftest.py, shared helpers in a helpers module (tests/helpers.py, tests/mcp/client.py
    ...): a test module imported by another runs its module-level code twice and hides what is shared."""
    found = []
    for file in _test_files():
        rel = file.relative_to(ROOT).with_suffix("")
        package = ".".join(rel.parts[:-1])
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([base] if base else [])])
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            found += [f"{rel}: {t}" for t in targets if t.split(".")[0] == "tests" and _is_test_module(t)]
    assert not found, "test modules imported by another module:\n" + "\n".join(found)


def test_the_front_door_stays_small():
    """`Wiki` opens the repo, resolves corpora and searches; how a corpus of this checkout is viewed, overlaid with
    the worktree and embedded lives in `sources/local.py`, beside the other sources."""
    wiki = next(n for n in _modules()["gitwiki.wiki"].body if isinstance(n, ast.ClassDef) and n.name == "Wiki")
    methods = [f.name for f in wiki.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
    assert len(methods) <= 25, methods
