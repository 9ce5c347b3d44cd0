"""Pages on disk and in git: paths and writes of one page, outlines, page facts, listings, the watch, index blocks
and their templates, the conventions."""
