"""`python -m agentkit`: the command line."""

from agentkit.cli import main

raise SystemExit(main())
