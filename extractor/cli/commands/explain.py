# extractor explain ID|SLUG|TEXT: one record as a page.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from extractor.errors import ExitCode
from extractor.util.progress import one_line, shown

if TYPE_CHECKING:
    pass

from extractor.cli.options import (
    PROG,
    Parser,
    add_catalogs,
    add_history,
    catalogs_of,
    lineage_note,
    lineages_of,
    parse_arguments,
    pasted,
)


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} explain",
        description="Explain one record: where it is thrown, when, which fields and flags it reads, and related "
        "errors; with several catalogs, in which releases. Exit status: 0 printed, 1 nothing found, 2 trouble.",
    )
    parser.add_argument(
        "query", metavar="ID|SLUG|TEXT", help="a record id or slug (or a unique prefix of one), or a rendered error"
    )
    add_catalogs(parser)
    parser.add_argument(
        "--format",
        choices=["text", "markdown", "json"],
        default="text",
        help="text for a terminal, markdown for a page or an issue (with a table of fields), json for tools "
        "(default: text)",
    )
    add_history(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.query.explain import NoRecord, explain_in, render

    args.query = pasted(args.query)
    options, specs = catalogs_of(args)
    try:
        explanation = explain_in(specs, args.query, repo=args.repo, options=options)
    except NoRecord as missing:
        short = " (an id or slug prefix needs 4 characters or more)" if len(args.query.strip()) < 4 else ""
        print(f"{PROG}: no record matches {one_line(repr(args.query))}{short}{missing.hint}", file=sys.stderr)
        return ExitCode.NOT_FOUND
    lineage = lineage_note(lineages_of(args), explanation.line.record.id)
    page = render(explanation, format=args.format, lineage=lineage)
    sys.stdout.write(page if args.format == "json" else shown(page))
    sys.stdout.flush()
    return ExitCode.OK
