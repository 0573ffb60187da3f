"""`python -m servescope.cli` runs the CLI."""

import sys

from servescope.cli import main

sys.exit(main())
