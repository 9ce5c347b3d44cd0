"""A page written through `gitwiki.operations.writes` is embedded in the write, so the next hybrid search pays nothing."""

from gitwiki.git.gitcli import blob_id
from gitwiki.operations import writes
from gitwiki.wiki import Wiki
from tests.helpers import FOOTNOTED_DEPLOY, needs_model


@needs_model
def test_add_page_embeds_the_new_page(repo):
    repo.commit("init", {"wiki/guides/deploy.md": FOOTNOTED_DEPLOY})
    wiki = Wiki.open(repo.path)
    wiki.index()
    content = "# On-call\n\nPage the zebra rota.\n"
    writes.add_page(wiki, None, "guides/oncall.md", content)
    model = wiki.embedder()
    assert model is not None
    blob = blob_id(content.encode())
    assert wiki.store.missing_vectors(model.model_id, [blob]) == []
    assert wiki.store.chunk_count([blob]) == 1
    wiki.close()
