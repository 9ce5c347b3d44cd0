"""A package's compiled extension module loaded without running the package's `__init__`: where a starting server
needs one class or function of a package whose `__init__` imports far more (watchfiles' Rust watcher: 25-30 ms of
anyio, multiprocessing and logging; pydantic_core's `to_json`: ~10 ms of `core_schema`; tokenizers' `Tokenizer`:
3.8 ms of its pure-Python tokenizer classes), spent while its first call waits. The module is registered under its
own name, so a later import of the package uses it, not a second load.

And numpy, whose first import in a process is made by one thread at a time (`numpy`).
"""

from __future__ import annotations

import _thread  # not `threading`: this module is imported where a process stays lean
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType


def extension(name: str) -> ModuleType | None:
    """Extension module `name` (package.module), already imported or loaded from the package's folder with the
    package not run; None where the package is not laid out so (the caller then imports it the plain way)."""
    import importlib.machinery
    import importlib.util
    import sys

    if name in sys.modules:
        return sys.modules[name]
    package, _, leaf = name.rpartition(".")
    try:
        spec = importlib.util.find_spec(package)  # finds the package without running it
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, leaf + suffix)
            if os.path.isfile(path):
                loader = importlib.machinery.ExtensionFileLoader(name, path)
                module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(name, loader, origin=path))
                loader.exec_module(module)
                sys.modules[name] = module
                return module
    return None


_FIRST_NUMPY = _thread.allocate_lock()


def numpy() -> ModuleType:
    """numpy, its first import in this process made by one thread at a time. A thread importing it while another
    imports it too, or loads an extension that imports its core (onnxruntime, pyarrow), can find it half made, and
    numpy (2.4) then refuses every later import in the process ("cannot load module more than once per process"): in
    a server whose warm-up loaded the model while a call's memory search imported numpy, every search that needs it
    failed from then on. Called for numpy where a thread may be the process's first to import it, and before
    importing such an extension."""
    found = sys.modules.get("numpy")
    if found is not None and not getattr(getattr(found, "__spec__", None), "_initializing", False):
        return found
    with _FIRST_NUMPY:
        import numpy as module

        return module


class Deferred:
    """Module `module`, imported on the first read of one of its attributes, which then puts the module itself in
    `namespace` (the importing module's globals) under `name` (default: the module's last part), in its own place:
    later reads cost nothing. For a module a common path never needs (pygit2: 45-60 ms of a cold memory search that
    reads no git object)."""

    def __init__(self, module: str, namespace: dict[str, object], name: str | None = None) -> None:
        self._module = module
        self._namespace = namespace
        self._name = name or module.rpartition(".")[2]

    def __getattr__(self, attr: str) -> object:
        import importlib

        module = importlib.import_module(self._module)
        self._namespace[self._name] = module
        return getattr(module, attr)
