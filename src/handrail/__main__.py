"""``python -m handrail``: the ``handrail`` command (`handrail.cli`), for an environment whose
scripts folder is not on the PATH."""

import sys

from .cli import main

sys.exit(main())
