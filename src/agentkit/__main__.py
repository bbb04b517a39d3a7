"""`python -m agentkit`: the command line."""

from agentkit._cli import main

raise SystemExit(main())
