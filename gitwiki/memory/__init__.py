"""Agent memory in the wiki: topic pages of timestamped entries (docs/memory.md).

Library entry points, each a plain function over a `Memory` (from `Memory.open(path)` or `Memory(wiki)`)
returning NamedTuples: `store.store`/`store.batch`, the edits `store.append`/`revise`/`tag`/`delete`/`rename`/
`merge`, `search.search`, `brief.brief`, `checkpoint.checkpoint`/`load_checkpoint`/`resume`,
`topics.list_topics` and the other topic actions. `replies` renders them as the MCP tools and the CLI answer,
one typed function per action; the action names are the adapters' (`gitwiki.memory.actions`). Importing this
package loads nothing heavy.
"""
