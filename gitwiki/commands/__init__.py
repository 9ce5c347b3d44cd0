"""One module per subcommand: `register(subparsers)` adds it, and its function returns an exit code."""
