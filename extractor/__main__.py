# Entry point for `python -m extractor`.
import sys

from extractor.cli import main

sys.exit(main())
