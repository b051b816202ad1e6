"""``python -m animgraph``: the command line."""

from .cli import main

raise SystemExit(main())
