"""`python -m trawl` is the `trawl` command."""

import sys

from trawl.cli import main

sys.exit(main())
