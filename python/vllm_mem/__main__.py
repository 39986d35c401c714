"""``python -m vllm_mem ...`` is the ``vllm-mem`` command line."""

import sys

from vllm_mem.cli import main

sys.exit(main())
