"""What a shell command reads and searches for: the files given to `cat`, `head`, `tail`, `sed`, `less`, `bat`,
`nl`, `awk`, the patterns given to `grep`, `rg`, `ag`, `ack`, `git grep`, `find -name`, `fd`.

Claude Code 2.1 has no Glob or Grep tool: agents read and search through its Bash tool, so the ambient hook
reads the command (`tool_input.command`) to give it the notes a Read or Grep would get. Pure logic, no I/O:
the paths are joined to the shell's working directory as written (`cd` followed along), and the hook decides
which of them are files of the repository. Words are split as the shell does (shlex, with `|`, `&&`, `;`,
`(`, `)` and line ends between commands and redirections skipped); `$(…)`, variables and globs are not
expanded, so such a word names nothing, and a here-document ends the reading.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import NamedTuple

MAX_COMMAND = 4096  # characters of a command read (shlex takes ~1.5 ms per 1,000)
MAX_FOUND = 3  # files, and patterns, per command

# Per program, its options that take a value as the next word (`-n 20`; `-n20` and `--lines=20` are one word).
_READERS = {
    "cat": set(),
    "tac": set(),
    "nl": set("-b -d -f -h -i -l -n -s -v -w".split()),
    "head": set("-n -c --lines --bytes".split()),
    "tail": set("-n -c --lines --bytes --pid -s --sleep-interval --max-unchanged-stats".split()),
    "less": set("-b -h -j -o -O -p -P -t -T -x -y -z".split()),
    "more": set("-n".split()),
    "bat": set(
        "-l --language -r --line-range -H --highlight-line --style --theme -m --map-syntax --tabs --wrap "
        "--color --decorations --paging --pager --file-name --terminal-width".split()
    ),
}
_READERS["batcat"] = _READERS["bat"]
# Programs whose first operand is a script, not a file, unless a script option gives it.
_SCRIPTED = {
    "sed": (set("-e -f -l --expression --file --line-length".split()), {"-e", "-f", "--expression", "--file"}),
    "awk": (set("-F -v -f".split()), {"-f"}),
}
_SEARCHERS = {
    "grep": set("-e -f -m -A -B -C -d -D --regexp --file --max-count --context --label --include --exclude".split()),
    "rg": set(
        "-e -f -g -t -T -m -A -B -C -M -j -r -E -d --regexp --file --glob --iglob --type --type-not --max-count "
        "--max-columns --threads --replace --encoding --max-depth --type-add --sort --sortr".split()
    ),
    "ag": set("-A -B -C -G -g -m --ignore --depth --file-search-regex".split()),
    "ack": set("-A -B -C -m --type --ignore-dir".split()),
    "git-grep": set("-e -f -A -B -C -m --max-depth --threads".split()),
    "fd": set("-e -t -d -E -x -X -c -j --extension --type --max-depth --exclude --exec --exec-batch".split()),
}
_SEARCHERS["egrep"] = _SEARCHERS["fgrep"] = _SEARCHERS["grep"]
_PATTERN_OPTIONS = {"-e", "--regexp"}
_FIND_PATTERNS = {"-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex"}
_GIT_VALUE_OPTIONS = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
_WRAPPERS = {"sudo", "command", "builtin", "exec", "time", "nice", "nohup", "xargs"}
_PROGRAMS = {*_READERS, *_SCRIPTED, *_SEARCHERS, "git", "find", "cd"}
# Any program of interest as a word: other commands are left without shlex.
_MENTIONS = re.compile(r"(?<![\w.-])(?:" + "|".join(sorted(map(re.escape, _PROGRAMS))) + r")(?![\w.-])")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_PUNCTUATION = ";&|()<>\n"


class ShellUse(NamedTuple):
    reads: list[str]  # paths as the shell would open them: joined to its directory, not normalized
    patterns: list[str]  # search patterns and name globs, as written


def shell_use(command: str, cwd: str) -> ShellUse:
    """The files `command`, run in `cwd`, reads and the patterns it searches for, MAX_FOUND of each."""
    reads: list[str] = []
    patterns: list[str] = []
    command = command[:MAX_COMMAND]
    if not _MENTIONS.search(command):
        return ShellUse(reads, patterns)
    for words, redirected in _commands(command):
        if len(reads) >= MAX_FOUND and len(patterns) >= MAX_FOUND:
            break
        words = _unwrapped(words)
        if not words:
            continue
        program = posixpath.basename(words[0])
        files: list[str] = list(redirected)
        if program == "cd":
            if len(words) > 1 and words[1] != "-":
                cwd = posixpath.join(cwd, words[1])
            continue
        if program == "git":
            words = _git_grep(words)
            program = "git-grep" if words else ""
        if program in _READERS:
            files += _operands(words[1:], _READERS[program])
        elif program in _SCRIPTED:
            values, script_options = _SCRIPTED[program]
            operands = _operands(words[1:], values)
            scripted = any(w.split("=", 1)[0] in script_options for w in words[1:])
            files += operands if scripted else operands[1:]
        elif program in _SEARCHERS:
            found, operands = _search(words[1:], _SEARCHERS[program])
            patterns += found
            files += operands
        elif program == "find":
            patterns += [v for k, v in zip(words, words[1:], strict=False) if k in _FIND_PATTERNS]
        reads += [posixpath.join(cwd, f) for f in files if f != "-"]
    return ShellUse(reads[:MAX_FOUND], patterns[:MAX_FOUND])


def _commands(command: str) -> Iterator[tuple[list[str], list[str]]]:
    """Each simple command's words, with the files its `<` redirections read."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=_PUNCTUATION)
    lex.whitespace = " \t\r"  # a line end separates commands
    lex.whitespace_split = True
    words: list[str] = []
    redirected: list[str] = []
    target = ""  # the redirection whose target is the next word
    try:
        for token in lex:
            if target:
                if target == "<":
                    redirected.append(token)
                target = ""
            elif token and not token.strip(_PUNCTUATION):
                if "<<" in token and "<<<" not in token:  # a here-document: its body is not commands
                    break
                if "<" in token or ">" in token:
                    if words and words[-1].isdigit():  # `2>`: the descriptor, not an argument
                        words.pop()
                    target = token
                    continue
                yield words, redirected
                words, redirected = [], []
            else:
                words.append(token)
    except ValueError:  # an unclosed quote (or a command cut at MAX_COMMAND): what came before counts
        pass
    yield words, redirected


def _unwrapped(words: list[str]) -> list[str]:
    """The command without its leading `VAR=value` words and wrappers (`sudo`, `time`, …) and their options."""
    i = 0
    while i < len(words):
        if _ASSIGNMENT.match(words[i]):
            i += 1
        elif words[i] in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
        else:
            break
    return words[i:]


def _operands(args: list[str], values: set[str]) -> list[str]:
    """The words that are not options nor option values (`--` ends the options)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return out + args[i + 1 :]
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in values else 1
            continue
        out.append(word)
        i += 1
    return out


def _search(args: list[str], values: set[str]) -> tuple[list[str], list[str]]:
    """A search command's patterns (`-e` values, else its first operand) and the operands after them."""
    given = [v for k, v in zip(args, args[1:], strict=False) if k in _PATTERN_OPTIONS]
    given += [w.split("=", 1)[1] for w in args if w.startswith("--regexp=")]
    operands = _operands(args, values)
    if given or "--files" in args:  # `rg --files DIR` lists files: no pattern
        return given, operands
    return operands[:1], operands[1:]


def _git_grep(words: list[str]) -> list[str]:
    """`git [options] grep ARGS` as `grep ARGS` (the program word kept), else []."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _GIT_VALUE_OPTIONS else 1
    return words[i:] if i < len(words) and words[i] == "grep" else []
