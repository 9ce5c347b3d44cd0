"""gitwiki.native: a package's compiled module loaded without the package, and the same module for a later import."""

from __future__ import annotations

from gitwiki.native import extension
from tests.helpers import python_prints


def test_a_package_or_module_that_is_not_there_is_none_and_the_caller_imports_it_plainly():
    assert extension("no_such_package_here._ext") is None
    assert extension("json.no_such_extension") is None  # a package, but no compiled module of that name
    assert extension("no_package") is None


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
