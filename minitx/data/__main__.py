"""``python -m minitx.data {list,verify,download} [NAME]``."""

import sys

from minitx.data.corpus import main

sys.exit(main())
