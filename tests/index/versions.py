"""Page versions indexed one after another, as a memory store writes them (each replacing the one before)."""

from __future__ import annotations

import hashlib

from gitwiki.index.store import Store
from gitwiki.markdown.chunker import parse_page


def blob_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def index_version(store: Store, previous: str | None, text: str) -> str:
    """Index `text` as the version replacing `previous` (its chunk rows carried over); returns its blob."""
    blob = blob_of(text)
    with store.write():
        if previous is None or previous == blob or store.known_blobs([blob]):
            if not store.known_blobs([blob]):
                store.add_blob(blob, parse_page(text))
            if previous not in (None, blob):
                store.drop([previous])
        else:
            store.replace_blob(previous, blob, parse_page(text))
    return blob
