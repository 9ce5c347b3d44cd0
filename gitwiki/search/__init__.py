"""Searching a corpus view: candidates, the one ranking pipeline, the weak flag, reranking, the LanceDB index,
the outline of a search."""
