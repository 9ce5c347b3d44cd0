"""The serve socket pair: `gitwiki serve`'s unix socket and the CLI's client of it."""
