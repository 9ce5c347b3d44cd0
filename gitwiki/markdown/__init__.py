"""Pure markdown handling: front matter, parsed pages, chunking, links, footnotes, index-block markers and
summaries. No I/O here."""

# What a page file name ends in: the MCP tools refuse other files, lint checks links to these as pages.
PAGE_SUFFIXES = (".md", ".markdown", ".mdx")
