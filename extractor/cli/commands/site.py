# extractor site: a catalog as a static site.
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from extractor.cli.options import PROG, Parser, add_catalog, extract_options, output_folder, parse_arguments
from extractor.errors import ExitCode
from extractor.util.progress import counted, note, sized


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} site",
        description="Build a static site of a catalog: an index with search and filters, a page per record and "
        "a page per diff the nightly job published. It works opened from file:// or from any static host.",
    )
    add_catalog(parser)
    parser.add_argument(
        "--analysis",
        metavar="FILE",
        help="JSONL of records or of {id, ...fields} whose analysis fields are shown on the pages (default: "
        "analysis.jsonl in the catalog directory, when there is one)",
    )
    parser.add_argument("--history", metavar="FILE", help="history.jsonl: each record's lineage, shown on its page")
    parser.add_argument(
        "--output", required=True, metavar="DIR", help="where the site goes; a site built there before is replaced"
    )
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    import time

    from extractor.publish.site.build import build_site, check_output
    from extractor.publish.site.inputs import open_site_inputs

    output = output_folder(args.output, "site")
    assert output is not None  # (a required option)
    check_output(output)  # before the catalog is read (or extracted): a folder that is no site is refused at once
    started = time.monotonic()
    inputs = open_site_inputs(
        args.catalog,
        repo=args.repo,
        options=extract_options(args),
        analysis=Path(args.analysis) if args.analysis else None,
        history=Path(args.history) if args.history else None,
    )
    summary = build_site(
        inputs.catalog, output=output, analysis=inputs.analysis, diffs=inputs.diffs, history=inputs.history
    )
    if not args.quiet:
        note(
            f"site of {counted(summary.records, 'record')} and {counted(summary.diffs, 'diff')}, "
            f"{counted(summary.files, 'file')}, "
            f"{sized(summary.bytes)} -> {args.output} ({time.monotonic() - started:.2f}s)",
            no_bar=True,
        )
    return ExitCode.OK
