"""Configuration: a user baseline plus the repo's `.gitwiki.toml`, validated into NamedTuple records.

Layers: `$XDG_CONFIG_HOME/gitwiki/config.toml` first, then `<repo>/.gitwiki.toml`. Tables merge key by
key (the repo wins); `[[corpus]]` and `[[repository]]` entries append, and a name defined twice is an error that
names both files. Environment variables override the model: `GITWIKI_MODEL`, `GITWIKI_MODEL_PATH`. A model
directory set without a model name (in a layer or the environment) names its model after the directory, over the
name a lower layer gave: the two always describe the same model.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki import trust
from gitwiki.errors import UnknownCorpus, UsageError
from gitwiki.fs import path_problem

REPO_CONFIG_NAME = ".gitwiki.toml"
DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
FUSIONS = ("rrf", "score")
MODES = ("hybrid", "lexical", "dense")
MEMORY_WRITES = ("auto", "project", "personal")
# The docs-site generator a corpus is published with: its links, navigation and conventions (gitwiki.pages.sites).
SITES = ("github", "mkdocs", "mdbook", "docusaurus")
MAX_INT = 2**31 - 1  # the largest whole number a setting takes
WEIGHTS = ("int8", "fp32")  # [embeddings] weights
MAX_THREADS = 1024  # [embeddings] threads: onnxruntime starts that many


class CorpusConfig(NamedTuple):
    name: str
    path: str = ""  # relative to the repo root; "" is the whole repo
    include: tuple[str, ...] = ("**/*.md",)
    exclude: tuple[str, ...] = ()
    lint_disable: tuple[str, ...] = ()
    site: str = "github"  # one of SITES: plain markdown as GitHub renders it, or a docs-site generator
    source: str = "defaults"  # the file that defined it, for error messages

    @property
    def prefix(self) -> str:
        """The corpus folder as a repo-relative path prefix: "docs/", or "" for the whole repo."""
        return self.path + "/" if self.path else ""

    def contains(self, path: str) -> bool:
        """Whether the repo-relative `path` lies under the corpus folder (include/exclude not applied)."""
        return path.startswith(self.prefix)


def matches(corpus: CorpusConfig, path: str) -> bool:
    """Whether the repo-relative `path` belongs to `corpus` (under its path, included, not excluded)."""
    return bool(select(corpus, (path,)))


def select(corpus: CorpusConfig, paths: Iterable[str]) -> list[str]:
    """The `paths` that belong to `corpus`, in their order. The hooks filter every path of a 20,000-page
    wiki: one comprehension matching each glob from the prefix's end, a fifth of the time of a `matches` call
    per path (docs/research/hooks.md)."""
    prefix, start = corpus.prefix, len(corpus.prefix)
    include, exclude = _globs(corpus.include), _globs(corpus.exclude)
    found = [p for p in paths if p.startswith(prefix) and include(p, start) and not exclude(p, start)]
    if corpus.site == "docusaurus":  # `_x.mdx`, and what is under `_x/`, are partials a page imports, not pages
        return [p for p in found if "/_" not in "/" + p[start:]]
    return found


@functools.cache
def _globs(patterns: tuple[str, ...]) -> Callable[[str, int], re.Match[str] | None]:
    """One compiled regex for a pattern list: the hooks test every page of a big wiki against it."""
    # "**/*.md" must also match a top-level "a.md", as in gitignore-style globs.
    variants = [v for p in patterns for v in ((p, p[3:]) if p.startswith("**/") else (p,))]
    return re.compile("|".join(f"(?:{fnmatch.translate(v)})" for v in variants) or "(?!)").match


class RepositoryConfig(NamedTuple):
    """Another git repo searched as `repo:NAME:wiki` (its wiki folder) and `repo:NAME:corpus` (all its markdown)."""

    name: str
    url: str | None = None  # a git URL (https, ssh, file://), fetched into the user cache
    path: str | None = None  # or a local repo, read in place; absolute once loaded
    ref: str | None = None  # branch, tag or commit; default: the remote's HEAD
    wiki: str | None = None  # default: the repo's own first [[corpus]] path, else "wiki"
    include: tuple[str, ...] = ("**/*.md",)
    exclude: tuple[str, ...] = ()
    source: str = "defaults"
    # Declared by the checkout's own .gitwiki.toml, which a clone brings: used only once the user allows it
    # (`gitwiki repo allow`, gitwiki.sources.consents.Consents). The user's baseline is trusted.
    from_checkout: bool = False
    memory: bool = False  # the personal memory repository (gitwiki.memory.personal); a local path only


# A page's lexical and dense evidence often sits in different chunks (the words in one section, the meaning in
# another), and chunk-level fusion then gives each chunk only half. So with score fusion a page also scores at page
# level, each ranking's best chunk of the page fused (`ranking.page_fusion`), and its base score is PAGE_SHARE of
# that plus the rest of its best fused chunk (docs/research/ranking.md): wiki-dev MRR@10 0.903 → 0.916, hit@1 0.851 →
# 0.874; docs/ 0.789 → 0.799; one-chunk pages (Cranfield, SciFact) unchanged. All page-level (1.0): docs/ −0.006.
PAGE_SHARE = 0.5
NORMALIZATIONS = ("dbsf", "minmax")  # of each ranking's scores before score fusion (ranking.Weighting)

# Fields the loader sets, never a config file.
_LOADER_FIELDS = ("source", "from_checkout")


class SearchConfig(NamedTuple):
    mode: str = "hybrid"
    fusion: str = "score"  # score fusion beat RRF on Cranfield and tldr (docs/research/ranking.md)
    top_files: int = 5
    chunks_per_file: int = 3
    limit: int = 50
    snippet_chars: int = 240
    auto_index: bool = True  # catch up with HEAD before answering
    reranker: str | None = None  # a fastembed cross-encoder model id; off by default (gitwiki.search.rerank)
    rerank_depth: int = 20  # fused chunks the cross-encoder re-scores
    max_page_bytes: int = 1_000_000  # larger pages are indexed up to it (gitwiki.index.indexer.read_page), and said so
    embed_budget: int = 256  # chunks of uncommitted pages a query may embed; pages past it are searched lexically
    # Score fusion (gitwiki.search.ranking.Weighting) and candidate depth: `gitwiki eval --tune` fits them to the wiki's
    # own questions; these defaults are the ones measured across the benchmark sets.
    fusion_weight: float = 0.5  # the lexical ranking's weight; the dense ranking gets 1 - it
    normalization: str = "dbsf"  # of each ranking's scores before fusion: "dbsf" or "minmax"
    page_share: float = PAGE_SHARE  # share of a page's base score taken from page-level fusion
    depth: int = 200  # chunks taken from each ranker before fusion


class EmbeddingsConfig(NamedTuple):
    enabled: bool = True
    provider: str = "fastembed"  # a key of gitwiki.index.embed.EMBEDDERS
    model: str = DEFAULT_MODEL
    model_path: str | None = None
    threads: int | None = None
    batch_size: int = 1  # texts a model run: one makes a text's vector its own (int8) in a fifth of the memory
    weights: str = "int8"  # a float32 model gitwiki runs (onnx_embed.MODELS) is run quantized unless "fp32"


class StorageConfig(NamedTuple):
    index_dir: str | None = None  # default: <git common dir>/gitwiki
    uri: str | None = None  # a LanceDB URI (e.g. s3://bucket/wiki) for the scale-out path
    ann_min_rows: int = 100_000  # `gitwiki lance export`: from this many rows the vectors get an IVF-HNSW-SQ index


class ArtifactConfig(NamedTuple):
    auto_pull: bool = True  # no local index yet: install the one published at the remote's refs/gitwiki/index


class LintConfig(NamedTuple):
    disable: tuple[str, ...] = ()
    max_page_bytes: int = 20_000  # GW011: a bigger page is probably more than one topic; 0 turns it off


class IndexBlocksConfig(NamedTuple):
    filename: str = "index.md"
    template: str | None = None  # a jinja2 template path relative to the repo root


class EvalConfig(NamedTuple):
    path: str | None = None  # the question file, relative to the repo root (default .gitwiki/eval.jsonl)


class McpConfig(NamedTuple):
    commit_writes: bool = False
    max_page_bytes: int = 1_000_000
    # Seconds the checkout's owner (`gitwiki serve`, docs/mcp.md) stays warm after its last session leaves; 0: it
    # ends with the last session.
    idle_timeout: int = 600


class AgentHooksConfig(NamedTuple):
    """`gitwiki hook`: what one injection into a Claude Code session may hold."""

    max_chars: int = 4000  # cap on the context one hook adds (Claude Code caps hook output at 10,000)
    results: int = 3  # sections per search (prompt, errors, each ambient layer shares it)
    snippet_chars: int = 360
    min_coverage: int = 50  # percent of the prompt's IDF weight (its 6 weightiest terms) a section must hold


class MemoryConfig(NamedTuple):
    corpus: str | None = None  # default: the repo's default corpus
    dir: str = "memory"  # folder of topic pages, relative to the corpus
    commit: bool = False  # commit each memory write (default: leave it in the worktree for review)
    repository: str | None = None  # the personal memory repository, read beside this one; absolute once loaded
    write: str = "auto"  # where writes go: auto, project or personal (MEMORY_WRITES; gitwiki.memory.stores.writer)


class Config(NamedTuple):
    corpora: tuple[CorpusConfig, ...]
    search: SearchConfig = SearchConfig()
    embeddings: EmbeddingsConfig = EmbeddingsConfig()
    storage: StorageConfig = StorageConfig()
    lint: LintConfig = LintConfig()
    index_blocks: IndexBlocksConfig = IndexBlocksConfig()
    mcp: McpConfig = McpConfig()
    agent_hooks: AgentHooksConfig = AgentHooksConfig()
    memory: MemoryConfig = MemoryConfig()
    eval: EvalConfig = EvalConfig()
    artifact: ArtifactConfig = ArtifactConfig()
    files: tuple[str, ...] = ()  # the config files that were read, in order
    repositories: tuple[RepositoryConfig, ...] = ()

    def corpus(self, name: str | None = None) -> CorpusConfig:
        """The named corpus, or the default (the first) when `name` is None."""
        if name is None:
            return self.corpora[0]
        for corpus in self.corpora:
            if corpus.name == name:
                return corpus
        choices = ", ".join(c.name for c in self.corpora)
        raise UnknownCorpus(f"no corpus named {_shown(name)}; choose one of: {choices}")


def index_dir(config: Config, root: Path, common_dir: Path) -> Path:
    """Where the index and the hooks' page-facts cache live: `[storage] index_dir`, else $GITWIKI_INDEX_DIR
    (relative to the repo root), else `<git common dir>/gitwiki`, shared by all worktrees."""
    configured = config.storage.index_dir or os.environ.get("GITWIKI_INDEX_DIR")
    if configured:
        return (root / os.path.expanduser(configured)).resolve()
    return common_dir / "gitwiki"


SECTIONS: dict[str, type] = {
    "search": SearchConfig,
    "embeddings": EmbeddingsConfig,
    "storage": StorageConfig,
    "lint": LintConfig,
    "index_blocks": IndexBlocksConfig,
    "mcp": McpConfig,
    "agent_hooks": AgentHooksConfig,
    "memory": MemoryConfig,
    "eval": EvalConfig,
    "artifact": ArtifactConfig,
}


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "gitwiki" / "config.toml"


def user_cache_dir(*parts: str) -> Path:
    """gitwiki's folder in the user's cache (`$XDG_CACHE_HOME/gitwiki`, by default `~/.cache/gitwiki`), and `parts`
    under it: data made from other data, safe to delete."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "gitwiki", *parts)


# A config file is a few kB; a checkout's is a stranger's, and a 1 GB comment (a ~1 MB blob in the clone) took 14 s
# and 3 GB to read. Globs and tables are bounded too: fnmatch's regex is quadratic in a glob of '[', and 50,000
# corpora were a quadratic check of names (docs/security.md).
CONFIG_CAP = 1 << 20
MAX_GLOB_CHARS = 1000
MAX_GLOBS = 1000
MAX_TABLES = 1000
MAX_DEPTH = 10_000
MAX_RERANK_DEPTH = 200


def read_toml(path: Path) -> dict[str, Any]:
    """One config layer's tables, as the file says them."""
    import tomllib  # ~3 ms with datetime and string, which the agent hooks skip (agent_hooks/cache.py)

    from gitwiki.fs import read_bounded  # its RefusedFile is a UsageError already: one line, exit 2

    try:
        data = read_bounded(path, cap=CONFIG_CAP, what="config file", fix="a config file is a small text file")
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: invalid TOML ({e}); fix the file or run `gitwiki config validate`") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except RecursionError:
        raise UsageError(f"{path}: its arrays or tables nest too deep to read; fix the file") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot read config ({e.strerror})") from None


def _check_type(value: object, annotation: Any, where: str) -> Any:
    """Coerce TOML values to the dataclass field type, or raise naming the key."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Union or origin is type(int | None):
        if value is None:
            return None
        annotation = next(a for a in args if a is not type(None))
        return _check_type(value, annotation, where)
    if origin is tuple:
        if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where} must be a list of strings")
        return tuple(value)
    if annotation is bool:
        if not isinstance(value, bool):
            raise UsageError(f"{where} must be true or false")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"{where} must be a whole number ≥ 0")
        if value > MAX_INT:  # SQLite's and C's integers end somewhere; no setting needs more
            raise UsageError(f"{where} must be a whole number from 0 to {MAX_INT}, not {str(value)[:40]}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{where} must be a number")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise UsageError(f"{where} must be a string")
        return value
    raise AssertionError(f"unsupported config type {annotation}")  # a bug in this module, not user input


def _fields(cls: type, table: dict[str, Any], where: str) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)  # a NamedTuple's annotations are its fields
    known = {name for name in hints if name not in _LOADER_FIELDS}
    out = {}
    for key, value in table.items():
        if key not in known:
            raise UsageError(f"{where}: unknown key {_shown(key)}; known keys: {', '.join(sorted(known))}")
        out[key] = _check_type(value, hints[key], f"{where}: {key}")
    return out


def _corpus(table: object, path: Path) -> CorpusConfig:
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [[corpus]] entries must be tables")
    values = _fields(CorpusConfig, table, f"{path} [[corpus]]")
    if "name" not in values or not values["name"]:
        raise UsageError(f"{path}: every [[corpus]] needs a name")
    values["path"] = normalize_corpus_path(values.get("path", ""), path)
    return CorpusConfig(**values, source=str(path))


def _repository(table: object, path: Path, from_checkout: bool) -> RepositoryConfig:
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [[repository]] entries must be tables")
    values = _fields(RepositoryConfig, table, f"{path} [[repository]]")
    name = values.get("name") or ""
    if not name or ":" in name or "/" in name:
        raise UsageError(f"{path}: every [[repository]] needs a name without ':' or '/' (it becomes repo:NAME:wiki)")
    if bool(values.get("url")) == bool(values.get("path")):
        raise UsageError(f"{path}: [[repository]] {_shown(name)} needs exactly one of url or path")
    if values.get("memory") and not values.get("path"):
        raise UsageError(
            f"{path}: [[repository]] {_shown(name)} is the memory repository: it needs a local path, not a url"
        )
    if values.get("path"):  # relative to the file that says it, like git's includes
        values["path"] = str((path.parent / os.path.expanduser(values["path"])).resolve())
    if values.get("wiki") is not None:
        values["wiki"] = normalize_corpus_path(values["wiki"], f"{path} [[repository]] {_shown(name)}")
    return RepositoryConfig(**values, source=str(path), from_checkout=from_checkout)


def _memory_repository(value: str, path: Path) -> str:
    """`[memory] repository`: `~` expanded, relative to the file that says it. Every project's memory writes
    go there, so a cloned checkout's own file may not choose it (it would send the agent's writes where
    the clone says): only the user's config, or a [[repository]] with memory = true, which the user
    allows first (`gitwiki repo allow`): gitwiki.trust drops a checkout's value but for "" (no personal memory here)."""
    return str((path.parent / os.path.expanduser(value)).resolve())


def _append_unique(entries: list[Any], entry: Any, kind: str, path: Path) -> None:
    """Array entries append; a name defined twice is an error naming both files."""
    for existing in entries:
        if existing.name == entry.name:
            raise UsageError(
                f"{kind} {_shown(entry.name)} is defined twice: in {existing.source} and in {path}; rename one"
            )
    entries.append(entry)


def normalize_corpus_path(raw: str, where: str | Path) -> str:
    folder = "/".join(p for p in raw.replace("\\", "/").split("/") if p not in ("", "."))
    if raw.startswith("/") or (folder and path_problem(folder)):
        raise UsageError(
            f"{where}: corpus path {_shown(raw)} must be a folder relative to the repo root, without '..' or .git"
        )
    return folder


def _merge_layer(state: dict[str, Any], data: dict[str, Any], path: Path, from_checkout: bool) -> None:
    for key, value in data.items():
        if key in ("corpus", "repository") and isinstance(value, list) and len(value) > MAX_TABLES:
            raise UsageError(f"{path}: more than {MAX_TABLES} [[{key}]] tables; a config names a few")
        if key == "corpus":
            if not isinstance(value, list):
                raise UsageError(f"{path}: use [[corpus]] (an array of tables) for corpora")
            for table in value:
                _append_unique(state["corpora"], _corpus(table, path), "corpus", path)
        elif key == "repository":
            if not isinstance(value, list):
                raise UsageError(f"{path}: use [[repository]] (an array of tables) for repositories")
            for table in value:
                _append_unique(state["repositories"], _repository(table, path, from_checkout), "repository", path)
        elif key in SECTIONS:
            if not isinstance(value, dict):
                raise UsageError(f"{path}: [{key}] must be a table")
            fields = _fields(SECTIONS[key], value, f"{path} [{key}]")
            if key == "embeddings" and "model_path" in fields and "model" not in fields:
                state[key].pop("model", None)  # a lower layer's name is not the name of this directory's model
            if key == "embeddings" and "model" in fields and "model_path" not in fields:
                _drop_other_models_path(state[key], fields["model"])
            if key == "memory" and fields.get("repository"):
                fields["repository"] = _memory_repository(fields["repository"], path)
            state[key].update(fields)
        else:
            raise UsageError(f"{path}: unknown key {_shown(key)}; known: corpus, repository, {', '.join(SECTIONS)}")


def _drop_other_models_path(embeddings: dict[str, Any], model: str) -> None:
    """A layer that names another model than a lower layer's directory holds (a checkout pinning the model its
    index was built with, over the user's local MiniLM) means that model: loading the directory under its name
    would label one model's vectors as another's."""
    path = embeddings.get("model_path")
    held = embeddings.get("model") or (model_from_path(path) if path else "")
    if path and _model_name(held) != _model_name(model):
        del embeddings["model_path"]


def _model_name(model: str) -> str:
    """A model's name without its organisation: `sentence-transformers/all-MiniLM-L6-v2` is the directory
    `all-MiniLM-L6-v2-onnx` holds."""
    return model.rsplit("/", 1)[-1].lower()


def _default_corpora(root: Path) -> tuple[CorpusConfig, ...]:
    if (root / "wiki").is_dir():
        return (CorpusConfig(name="wiki", path="wiki"),)
    return (CorpusConfig(name="wiki", path=""),)


def load(root: Path, *, user_file: Path | None = None, read: Callable[[Path], dict[str, Any]] = read_toml) -> Config:
    """Read the baseline and the repo layer for the repo at `root` (each file through `read`), then apply env
    overrides."""
    state: dict[str, Any] = {"corpora": [], "repositories": [], **{name: {} for name in SECTIONS}}
    files = []
    user_file = user_file or user_config_path()
    checkout_file = root / REPO_CONFIG_NAME
    if user_file.is_file():
        _merge_layer(state, read(user_file), user_file, from_checkout=False)
        files.append(str(user_file))
    user_memory = bool(state["memory"].get("repository")) or any(r.memory for r in state["repositories"])
    if checkout_file.is_file():  # a stranger's file, as gitwiki.trust classifies its keys
        trust.confine(REPO_CONFIG_NAME, root, str(checkout_file))  # a symlink out of the repository is refused
        data, ignored = trust.checkout_layer(read(checkout_file), checkout_file, root, user_file)
        _merge_layer(state, data, checkout_file, from_checkout=True)
        state["repositories"], dropped = trust.memory_conflict(user_memory, state["repositories"], checkout_file)
        for line in (ignored, dropped):
            if line:
                trust.warn(line)
        files.append(str(checkout_file))
    embeddings = state["embeddings"]
    if os.environ.get("GITWIKI_MODEL"):
        embeddings["model"] = os.environ["GITWIKI_MODEL"]
    if os.environ.get("GITWIKI_MODEL_PATH"):
        embeddings["model_path"] = os.environ["GITWIKI_MODEL_PATH"]
        if not os.environ.get("GITWIKI_MODEL"):
            embeddings.pop("model", None)
    if embeddings.get("model_path"):
        embeddings["model_path"] = str((root / os.path.expanduser(embeddings["model_path"])).resolve())
        # A model directory without a model name would load as the default model, whose files are not
        # there: name it after the directory instead.
        embeddings.setdefault("model", model_from_path(embeddings["model_path"]))
    config = Config(
        corpora=tuple(state["corpora"]) or _default_corpora(root),
        files=tuple(files),
        repositories=tuple(state["repositories"]),
        **{name: cls(**state[name]) for name, cls in SECTIONS.items()},
    )
    _validate(config)
    return config


def model_from_path(path: str) -> str:
    """The model a local directory holds, by its name: `…/all-MiniLM-L6-v2-onnx` → `all-MiniLM-L6-v2`, and a
    Hugging Face cache snapshot `…/models--org--name/snapshots/<hash>` → `org/name`."""
    parts = Path(path).parts
    for part in reversed(parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    name = parts[-1] if parts else path
    for suffix in ("-onnx", "_onnx", ".onnx"):
        name = name.removesuffix(suffix)
    return name


def _validate(config: Config) -> None:
    if config.search.mode not in MODES:
        raise UsageError(f"[search] mode must be one of {', '.join(MODES)}, not {_shown(config.search.mode)}")
    if config.search.fusion not in FUSIONS:
        raise UsageError(f"[search] fusion must be one of {', '.join(FUSIONS)}, not {_shown(config.search.fusion)}")
    if config.search.normalization not in NORMALIZATIONS:
        raise UsageError(
            f"[search] normalization must be one of {', '.join(NORMALIZATIONS)}, "
            f"not {_shown(config.search.normalization)}"
        )
    for key in ("fusion_weight", "page_share"):
        value = getattr(config.search, key)
        if not 0.0 <= value <= 1.0:
            raise UsageError(f"[search] {key} must be a number from 0 to 1, not {value!r}")
    if not 1 <= config.search.depth <= MAX_DEPTH:
        raise UsageError(f"[search] depth must be a whole number from 1 to {MAX_DEPTH} (chunks taken from each ranker)")
    if config.search.rerank_depth > MAX_RERANK_DEPTH:  # a model run a chunk: 5,000 of them were minutes a search
        raise UsageError(f"[search] rerank_depth must be a whole number from 0 to {MAX_RERANK_DEPTH}")
    for corpus in config.corpora:
        where = f"{corpus.source} [[corpus]] {_shown(corpus.name)}"
        if corpus.site not in SITES:
            raise UsageError(f"{where}: site must be one of {', '.join(SITES)}")
        for key in ("include", "exclude"):
            globs = getattr(corpus, key)
            if len(globs) > MAX_GLOBS or any(len(g) > MAX_GLOB_CHARS for g in globs):
                raise UsageError(f"{where}: {key} takes at most {MAX_GLOBS} globs of {MAX_GLOB_CHARS} characters each")
    if config.embeddings.weights not in WEIGHTS:
        raise UsageError(
            f"[embeddings] weights must be one of {', '.join(WEIGHTS)}, not {_shown(config.embeddings.weights)}"
        )
    if config.embeddings.batch_size < 1:
        raise UsageError("[embeddings] batch_size must be a whole number ≥ 1 (texts a model run)")
    if (config.embeddings.threads or 0) > MAX_THREADS:
        raise UsageError(f"[embeddings] threads must be a whole number from 0 to {MAX_THREADS}")
    if config.memory.write not in MEMORY_WRITES:
        raise UsageError(f"[memory] write must be one of {', '.join(MEMORY_WRITES)}, not {_shown(config.memory.write)}")
    memory = [r for r in config.repositories if r.memory]
    if len(memory) > 1 or (memory and config.memory.repository):
        named = [f"[[repository]] {_shown(r.name)} in {r.source}" for r in memory]
        named += ["[memory] repository"] if config.memory.repository else []
        raise UsageError(f"one personal memory repository at most: {' and '.join(named)} both name one; keep one")


def _shown(value: object) -> str:
    """A value in an error line, cut short: a checkout may hold a 5,000-character one."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def warnings(config: Config, root: Path) -> list[str]:
    """What a valid configuration still gets wrong on disk at the checkout `root`, each with its fix:
    a corpus folder that is not there (nothing would be indexed), a [[repository]] path that is not."""
    out = []
    for c in config.corpora:
        if c.path and not (root / c.path).is_dir():
            made = "is not a folder" if (root / c.path).exists() else "does not exist"
            out.append(
                f"corpus {c.name!r}: {root / c.path} {made}, so it has no pages; create the folder "
                f"(mkdir -p {c.path}) or fix path in {c.source}"
            )
    for r in config.repositories:
        if r.path and not Path(r.path).exists():
            out.append(f"[[repository]] {_shown(r.name)}: path {r.path} does not exist; fix path in {r.source}")
    return out


def to_toml(config: Config) -> str:
    """The effective configuration as TOML (for `gitwiki config show`)."""
    lines = []
    for corpus in config.corpora:
        lines.append(f"[[corpus]]  # from {corpus.source}")
        for key, value in corpus._asdict().items():
            if key != "source":
                lines.append(f"{key} = {toml_value(value)}")
        lines.append("")
    for repository in config.repositories:
        lines.append(f"[[repository]]  # from {repository.source}; corpora repo:{repository.name}:wiki, :corpus")
        for key, value in repository._asdict().items():
            if key not in _LOADER_FIELDS and value is not None:
                lines.append(f"{key} = {toml_value(value)}")
        lines.append("")
    for name in SECTIONS:
        lines.append(f"[{name}]")
        section = getattr(config, name)
        for key, value in section._asdict().items():
            lines.append(f"{key} = {toml_value(value)}" if value is not None else f"# {key} = (unset)")
        lines.append("")
    return "\n".join(lines)


def toml_value(value: object) -> str:
    """A setting's value as a TOML literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
