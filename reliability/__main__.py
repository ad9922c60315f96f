"""``python -m reliability`` runs the CLI."""

import sys

from reliability.cli import main

sys.exit(main())
