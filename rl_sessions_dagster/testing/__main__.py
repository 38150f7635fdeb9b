"""``python -m rl_sessions_dagster.testing serve ...`` — same as the ``rl-sessions-simulator`` CLI."""

import sys

from .cli import main

sys.exit(main())
