"""Git through pygit2 and the git program, other repositories' objects, plain git hooks."""
