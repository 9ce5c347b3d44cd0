"""The MCP adapter: the server, its memory tools, the LanceDB-only server, the early stdio reader."""
