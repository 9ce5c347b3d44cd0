"""gitwiki.native: a package's compiled module loaded without the package, and the same module for a later import."""

from __future__ import annotations

import subprocess
import sys

from gitwiki.native import Deferred, extension
from tests.helpers import MODEL_DIR, MODEL_NAME, needs_model, python_prints


def test_a_package_or_module_that_is_not_there_is_none_and_the_caller_imports_it_plainly():
    assert extension("no_such_package_here._ext") is None
    assert extension("json.no_such_extension") is None  # a package, but no compiled module of that name
    assert extension("no_package") is None


def test_a_deferred_module_is_imported_on_first_use_and_then_stands_in_its_own_place():
    namespace: dict[str, object] = {}
    namespace["colorsys"] = Deferred("colorsys", namespace)
    assert namespace["colorsys"].rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)  # type: ignore[attr-defined]
    import colorsys

    assert namespace["colorsys"] is colorsys
    namespace["named"] = Deferred("email.utils", namespace, "named")
    assert namespace["named"].quote("a") == "a"  # type: ignore[attr-defined]
    assert namespace["named"] is sys.modules["email.utils"]


def test_the_owners_answers_are_written_without_pydantic_cores_package_and_as_it_writes_them():
    """pydantic_core's `core_schema` (~10 ms of an owner's first answer) stays unloaded; the later `import
    pydantic_core` (the SDK's, when a session needs it) reuses the one compiled module and writes the same bytes."""
    code = (
        "import sys\n"
        "from gitwiki.mcp.lean import encode\n"
        "message = {'id': 1, 'result': {'x': 1e-7, 'y': 0.5, 's': 'h\\u00e9llo \\u2028', 'n': None, 'l': [1, 2.0]}}\n"
        "line = encode(message)\n"
        "alone = sorted(m for m in ('pydantic_core', 'pydantic_core.core_schema') if m in sys.modules)\n"
        "import pydantic_core\n"
        "import pydantic_core._pydantic_core as pdc  # as pydantic's version report imports it\n"
        "same = pydantic_core.to_json is pdc.to_json is sys.modules['pydantic_core._pydantic_core'].to_json\n"
        "print(alone, same, line == pydantic_core.to_json(message) + b'\\n', line.startswith(b'{\"id\":1,'))\n"
    )
    assert python_prints(code) == ["[]", "True", "True", "True"]


def test_the_models_tokenizer_loads_without_the_tokenizers_package_and_encodes_as_it_does(tmp_path):
    """tokenizers' `__init__` (its pure-Python tokenizer classes, 3.8 ms of a new owner's model thread) stays
    unloaded; a later `import tokenizers` reuses the one compiled module, and the tokens are the package's."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordPiece
    from tokenizers.pre_tokenizers import Whitespace

    plain = Tokenizer(
        WordPiece({"[UNK]": 0, "[PAD]": 1, "deploy": 2, "with": 3, "argo": 4, "##s": 5}, unk_token="[UNK]")
    )
    plain.pre_tokenizer = Whitespace()
    plain.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text('{"model_max_length": 8, "pad_token": "[PAD]"}')
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gitwiki.index.onnx_embed import load_tokenizer\n"
        f"tokens = load_tokenizer(Path({str(tmp_path)!r})).encode('deploy with argos').tokens\n"
        "alone = 'tokenizers.implementations' in sys.modules\n"
        "import tokenizers\n"
        "print('|'.join(tokens), alone, tokenizers.Tokenizer is sys.modules['tokenizers.tokenizers'].Tokenizer)\n"
    )
    assert python_prints(code) == ["deploy|with|argo|##s", "False", "True"]


RACE = """
import sys, threading
from gitwiki.config import EmbeddingsConfig
from gitwiki.index.onnx_embed import lean_embedder
from gitwiki.search.lexicon import _empty

go, failed = threading.Barrier(2), []
config = EmbeddingsConfig(model=sys.argv[1], model_path=sys.argv[2], weights="fp32")

def model():  # the owner's warm-up thread loads its model (onnxruntime's extension imports numpy's core)
    go.wait()
    try:
        assert lean_embedder(config) is not None
    except ImportError as e:
        failed.append(repr(e))

def call():  # at the same moment a call's thread ranks a memory search's BM25 (numpy)
    go.wait()
    try:
        _empty()
    except ImportError as e:
        failed.append(repr(e))

threads = [threading.Thread(target=model), threading.Thread(target=call)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(failed or "whole")
"""


@needs_model
def test_numpy_is_whole_when_the_model_loads_on_another_thread_at_the_same_moment():
    """Unguarded, a thread importing numpy while another imported onnxruntime broke numpy for the process in 2 of 16
    fresh interpreters here ("cannot load module more than once per process"): every later dense or memory search
    of that server failed. 24 fresh interpreters race a model's load and a memory search's BM25."""
    for _ in range(24):
        run = subprocess.run(
            [sys.executable, "-c", RACE, MODEL_NAME, str(MODEL_DIR)], capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0 and run.stdout.split() == ["whole"], run.stdout + run.stderr


def test_numpy_and_what_imports_its_core_are_imported_through_the_guard():
    """Every import of numpy at run time is `native.numpy()`, and onnxruntime, fastembed and lancedb are imported
    after it in the same function: a first import by any other way could race another thread's."""
    import ast
    from pathlib import Path

    import gitwiki

    heavy = ("onnxruntime", "fastembed", "lancedb")
    wrong = []
    for path in Path(gitwiki.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        checking = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            guarded = min(
                (c.lineno for c in ast.walk(func) if isinstance(c, ast.Call) and ast.unparse(c.func) == "numpy"),
                default=None,
            )
            for node in ast.walk(func):
                if id(node) in checking or not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if path.name != "native.py" and any(n.split(".")[0] == "numpy" for n in names):
                    wrong.append(f"{path.name}:{node.lineno} imports numpy")
                if any(n.split(".")[0] in heavy for n in names) and (guarded is None or guarded > node.lineno):
                    wrong.append(f"{path.name}:{node.lineno} imports {names} before numpy()")
    assert wrong == []
