# extractor explain ID|SLUG|TEXT: one record as a page.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from extractor.errors import ExitCode
from extractor.util.progress import one_line, shown

if TYPE_CHECKING:
    from extractor.query.explain import Explanation

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
    parser.add_argument(
        "--runtime",
        metavar="PYTHON",
        help="an interpreter where vLLM is installed, to run the fix of your own values before it is shown as working "
        "(default: the release's runtime in the user cache, when `reproduce` made one; else the fix is shown as "
        "derived, not run)",
    )
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.query.explain import NoRecord, Theirs, explain_in, render

    args.query = pasted(args.query)
    options, specs = catalogs_of(args)
    try:
        explanation = explain_in(specs, args.query, repo=args.repo, options=options)
    except Theirs as theirs:
        print(
            f"{PROG}: no record answers {one_line(repr(args.query))} with confidence: {theirs.words()}", file=sys.stderr
        )
        return ExitCode.NOT_FOUND
    except NoRecord as missing:
        short = " (an id or slug prefix needs 4 characters or more)" if len(args.query.strip()) < 4 else ""
        print(f"{PROG}: no record matches {one_line(repr(args.query))}{short}{missing.hint}", file=sys.stderr)
        return ExitCode.NOT_FOUND
    if explanation.values:
        explanation = _with_fixes(explanation, args)
    lineage = lineage_note(lineages_of(args), explanation.line.record.id)
    page = render(explanation, format=args.format, lineage=lineage)
    sys.stdout.write(page if args.format == "json" else shown(page))
    sys.stdout.flush()
    return ExitCode.OK


def _with_fixes(explanation: Explanation, args: argparse.Namespace) -> Explanation:
    """The explanation with the fixes of the user's own line (the values the text showed), run when a runtime is
    at hand: --runtime, or the runtime `reproduce` made for the release the reproduction was run against."""
    import dataclasses

    from extractor.cli.options import step_log
    from extractor.reproduce.runtime import runtime_dir
    from extractor.reproduce.user_fix import run_fixes, user_fixes

    line = explanation.line
    fixes = user_fixes(line, explanation.values)
    made = line.extraction.reproduction
    if not fixes or made is None:
        return explanation
    python = args.runtime
    if python is None and made.verifiedWith.startswith("vllm=="):
        folder = runtime_dir("vllm", made.verifiedWith.removeprefix("vllm=="))
        if (folder / "runtime.json").is_file():
            python = str(folder / "bin" / "python")
    if python is not None:
        fixes = run_fixes(line, fixes, python, say=step_log("explain", args))
    return dataclasses.replace(explanation, fixes=tuple(fixes))
