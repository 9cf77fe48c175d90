"""``python -m sentlab.cli``: the command line (also under torchrun / accelerate launch)."""

import sys

from sentlab.cli import main

sys.exit(main())
