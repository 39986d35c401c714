import sys

from vllm_mem.cli import main

sys.exit(main())
