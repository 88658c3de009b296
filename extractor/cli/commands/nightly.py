# extractor nightly: publish the catalog of a branch head, its diff, the index (and the site).
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from extractor.cli.options import (
    PROG,
    Parser,
    add_repo,
    add_run,
    add_scope,
    extract_options,
    output_folder,
    parse_arguments,
    positive,
    step_log,
)
from extractor.errors import ExitCode

# `--site` alone: the site beside the catalogs, in DIR/site (a value no argument can be: `--site ''` is refused).
_SITE_BESIDE = "\0beside"


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} nightly",
        description="Publish the catalog of a branch head into DIR/<sha>/ with a diff against the last "
        "published one, then DIR/index.json. Safe to re-run, to kill and to start twice.",
    )
    add_repo(parser)
    parser.add_argument("--branch", default="main", help="the branch to follow (default: main)")
    parser.add_argument("--output", metavar="DIR", help="where catalogs are published (default: output/<owner>/<name>)")
    parser.add_argument(
        "--keep", type=positive, metavar="N", help="keep only the newest N catalogs on disk and in the index"
    )
    add_scope(parser)
    parser.add_argument(
        "--analysis",
        metavar="FILE",
        help="JSONL of analysis by id (records or {id, ...fields}) to merge into the published catalog's "
        "analysis.jsonl",
    )
    parser.add_argument(
        "--site",
        nargs="?",
        const=_SITE_BESIDE,
        metavar="DIR",
        help="rebuild the static site of the latest catalog after publishing, built aside then switched to "
        "at once (DIR is a symlink to it; default: DIR/site of --output)",
    )
    add_run(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.publish.nightly import nightly

    log = step_log("nightly", args)

    nightly(
        repo=args.repo,
        branch=args.branch,
        output=output_folder(args.output, "nightly", writable=False),  # (up to date: nothing to write)
        options=extract_options(args),
        keep=args.keep,
        log=log,
        analysis=Path(args.analysis) if args.analysis else None,
        site=None if args.site is None else Path("" if args.site == _SITE_BESIDE else args.site),  # "": DIR/site
    )
    return ExitCode.OK
