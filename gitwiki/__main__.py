import sys

if "--owner-fd" in sys.argv:
    # The owner `serve.owner.start` spawns (`-m gitwiki -C DIR serve --owner-fd N`): its model starts loading
    # before the CLI's imports and parsing, which it waits for otherwise (docs/research/sessions-lean.md).
    from gitwiki.index.embed import load_in_background

    load_in_background(sys.argv[2] if sys.argv[1:2] == ["-C"] else ".")

from gitwiki.cli import main

sys.exit(main())
