"""Pure markdown handling: front matter, chunking, links, index blocks. No I/O here."""
