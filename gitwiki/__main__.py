import sys

from gitwiki.cli import main

sys.exit(main())
