"""The search index: builds, the SQLite store, embeddings, tokens, artifacts and their publishing."""
