"""``python -m maxmargin.cli``."""

import sys

from maxmargin.cli import main

sys.exit(main())
