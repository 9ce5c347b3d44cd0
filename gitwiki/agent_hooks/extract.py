"""What the ambient hook searches for: the symbols a source file defines, the names an edit removes.

Regular expressions, not parsers: a hook has milliseconds (compiling these two takes 1.2 ms, so the error
hooks, whose patterns live in failures.py, do not load them), and a definition keyword followed by a name
finds the symbols of most languages (Python, JS/TS, Go, Rust, Java/Kotlin/C#, C/C++, Ruby, PHP, shell).
"""

from __future__ import annotations

import re

from gitwiki.index.tokens import code_like

MAX_LINES = 500
MAX_LINE = 1000  # characters of a line looked at: a definition's name comes in its first words
MAX_SYMBOLS = 20
MAX_EDIT = 256 * 1024  # characters of an edit's old and new text compared (10 MB took 0.7 s)

_DEFINITION = re.compile(
    r"""^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:pub(?:\([^)\n]*\))?[ \t]+)?(?:async[ \t]+)?(?:
        (?:def|class|function\*?|func|fn|struct|enum|trait|interface|module|impl|record|union|object|protocol
           |typedef[ \t]+struct|type|macro_rules!)
        [ \t]+(?:\([^)\n]*\)[ \t]*)?(?P<name>[A-Za-z_$][\w$]*)
      | (?:const|let|var)[ \t]+(?P<bound>[A-Za-z_$][\w$]*)[ \t]*(?::[^=\n]*)?=[ \t]*(?:async[ \t]*)?
        (?:function|\(|[\w$]+[ \t]*=>)
      | \#define[ \t]+(?P<macro>[A-Za-z_]\w*)
      | (?P<shell>[A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{
    )""",
    re.MULTILINE | re.VERBOSE,
)
# C-family method and function definitions: a return type, a name, parameters, then `{` or a line end (not a
# statement such as `return f(x)` that has the same shape).
_C_FUNCTION = re.compile(
    r"^(?![ \t]*(?:return|else|new|throw|yield|await|delete|case|goto|echo|print|raise|assert|not)\b)[ \t]*"
    r"(?:(?:public|private|protected|internal|static|final|virtual|override|inline|extern|abstract|"
    r"synchronized|const|unsafe)[ \t]+)*[\w<>\[\],:*& ]+?[ \t*&]+(?P<name>[A-Za-z_]\w*)[ \t]*\([^;{}\n]*\)[ \t]*"
    r"(?:const[ \t]*)?(?:throws[ \t][\w, .]+)?\{?[ \t]*$",
    re.MULTILINE,
)
_NOT_SYMBOLS = frozenset(
    "if for while switch catch return else elif main init self this new get set test setup run do end".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def symbols(text: str) -> list[str]:
    """Up to MAX_SYMBOLS names defined in the first MAX_LINES lines of a source file, in order."""
    # Each line cut to MAX_LINE, and no pattern crosses a line end: a type annotation scanned up to the next `=`
    # anywhere took 15 s on 500 lines of 4,000 characters, since every `const x:` line rescanned the rest.
    head = "\n".join(line[:MAX_LINE] for line in text.split("\n", MAX_LINES)[:MAX_LINES])
    found: dict[int, str] = {}
    for m in _DEFINITION.finditer(head):
        found.setdefault(m.start(), next(g for g in m.groups() if g))
    for m in _C_FUNCTION.finditer(head):
        found.setdefault(m.start(), m.group("name"))
    names = [n for _, n in sorted(found.items()) if _meaningful(n)]
    return list(dict.fromkeys(names))[:MAX_SYMBOLS]


def removed_names(old: str, new: str) -> list[str]:
    """Names an edit takes out: the symbols `old` defines, then its other identifiers, that `new` lacks."""
    old, new = old[:MAX_EDIT], new[:MAX_EDIT]
    kept = set(_IDENTIFIER.findall(new))
    defined = [n for n in symbols(old) if n not in kept]
    others = [n for n in _IDENTIFIER.findall(old) if n not in kept and _meaningful(n) and code_like(n)]
    return list(dict.fromkeys(defined + others))[:MAX_SYMBOLS]


def _meaningful(name: str) -> bool:
    return len(name) >= 3 and not name.startswith("__") and name.lower() not in _NOT_SYMBOLS
