# Entry point for `python -m extractor`.
import sys

try:
    from extractor.cli.main import run_and_exit
except KeyboardInterrupt:  # a Ctrl-C before the command line is ready to take it: still its one line
    print("extractor: interrupted", file=sys.stderr)
    sys.exit(130)

run_and_exit()
