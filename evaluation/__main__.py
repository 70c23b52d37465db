"""``python -m evaluation``: see evaluation/run.py."""

import sys

from evaluation.run import main

sys.exit(main())
