# Entry point for `python -m extractor`.
from extractor.cli import run

run()
