"""The memory library's shape: one typed function per operation. Which action name calls which function is the
adapters' table (gitwiki/memory/actions.py), so no library function takes `**options` or dispatches by name."""

from __future__ import annotations

import ast

from tests.helpers import ROOT


def test_no_memory_function_takes_options_or_dispatches_by_name():
    found = []
    for file in sorted((ROOT / "gitwiki/memory").glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            where = f"{file.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.args.kwarg:
                found.append(f"{where} {node.name}(**{node.args.kwarg.arg})")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals":
                found.append(f"{where} globals()")
            elif isinstance(node, ast.Import | ast.ImportFrom) and any(a.name == "inspect" for a in node.names):
                found.append(f"{where} import inspect")
    assert not found, found
