"""gitwiki: a git-keyed, searchable markdown wiki for people and coding agents."""

__version__ = "0.1.0"
