"""A page's front-matter description is indexed in its first chunk's head (docs/research/signals.md): a question
in the description's words finds the page, an edit to the description is searched after an incremental index, and
an index written before (tokens version 3) gains it on open."""

from gitwiki.index import tokens
from gitwiki.wiki import Wiki

CONFIG = {".gitwiki.toml": "[embeddings]\nenabled = false\n"}
LOCKS = (
    "---\ndescription: Pinning every transitive dependency to reproducible versions\n---\n"
    "# Lockfiles\n\nThe lockfile records resolved versions.\n\n## Format\n\nA TOML table per package.\n"
)
OTHER = "# Caching\n\nThe cache keeps wheels between runs.\n"


def lexical(wiki, query):
    return [d.path for d in wiki.search(query, mode="lexical").docs]


def opened(repo, pages):
    repo.commit("pages", {**CONFIG, **pages})
    wiki = Wiki.open(repo.path)
    wiki.index()
    return wiki


def test_the_description_finds_its_page_through_the_first_chunk_only(repo):
    wiki = opened(repo, {"wiki/lock.md": LOCKS, "wiki/cache.md": OTHER})
    result = wiki.search("transitive reproducible", mode="lexical")
    assert [d.path for d in result.docs] == ["wiki/lock.md"]
    assert result.docs[0].chunks[0].breadcrumb == ["Lockfiles"]  # the lead chunk, not the Format section
    conn = wiki.store.conn
    rows = conn.execute(
        "SELECT c.ord, f.head FROM fts f JOIN chunks c ON c.id = f.rowid JOIN blobs b ON b.blob = c.blob "
        "WHERE b.title = 'Lockfiles'"
    )
    heads = dict(rows)
    transitive = tokens.tokenize("transitive")[0]
    assert transitive in heads[0].split()
    assert transitive not in heads[1].split()


def test_a_page_without_front_matter_indexes_as_before(repo):
    wiki = opened(repo, {"wiki/cache.md": OTHER})
    heads = [h for (h,) in wiki.store.conn.execute("SELECT head FROM fts")]
    assert heads == [tokens.fts_text("Caching Caching")]  # the title and the H1 breadcrumb, nothing more


def test_an_edited_description_is_searched_after_an_incremental_index(repo):
    wiki = opened(repo, {"wiki/lock.md": LOCKS, "wiki/cache.md": OTHER})
    wiki.close()
    repo.commit("edit", {"wiki/lock.md": LOCKS.replace("Pinning every transitive", "Freezing the whole")})
    again = Wiki.open(repo.path)
    again.index()
    assert lexical(again, "transitive") == []
    assert lexical(again, "freezing whole") == ["wiki/lock.md"]
    assert lexical(again, "wheels") == ["wiki/cache.md"]  # the untouched page's rows are still there


def test_an_index_of_tokens_version_3_gains_descriptions_on_open(repo):
    wiki = opened(repo, {"wiki/lock.md": LOCKS, "wiki/cache.md": OTHER})
    conn = wiki.store.conn
    # As version 3 wrote it: the head held title, headings and tags only.
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'tokens_version'")
    conn.execute("UPDATE fts SET head = 'lockfil lockfil' WHERE head LIKE 'lockfil%transit%'")
    assert lexical(wiki, "transitive reproducible") == []
    wiki.close()
    again = Wiki.open(repo.path)
    assert lexical(again, "transitive reproducible") == ["wiki/lock.md"]
    version = again.store.conn.execute("SELECT value FROM meta WHERE key = 'tokens_version'").fetchone()
    assert version == (tokens.TOKENS_VERSION,)


def test_a_page_found_by_its_description_is_not_a_weak_match(repo):
    wiki = opened(repo, {"wiki/lock.md": LOCKS, "wiki/cache.md": OTHER})
    found = wiki.search("transitive reproducible", mode="lexical")
    assert [(d.path, d.weak) for d in found.docs] == [("wiki/lock.md", False)]
    # The description counts on the first chunk only, as it is indexed: the Format section's words stay its own.
    assert [(d.path, d.weak) for d in wiki.search("TOML table per package", mode="lexical").docs] == [
        ("wiki/lock.md", False)
    ]
    assert wiki.search("quantum chromodynamics", mode="lexical").weak
