"""`python -m relayrl.cli ...`: the same as the `relayrl` command."""

import sys

from relayrl.cli.app import main

sys.exit(main())
