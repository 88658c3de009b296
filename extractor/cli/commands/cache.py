# extractor cache info|clear: what the user cache directory holds, or emptying it.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from extractor.cli.options import PROG, Parser, add_run, parse_arguments
from extractor.errors import ExitCode, ExtractorError
from extractor.util.progress import one_line, sized


def parser() -> argparse.ArgumentParser:
    from extractor.repo.housekeeping import PARTS

    parser = Parser(
        prog=f"{PROG} cache",
        description="Say where the user cache directory is and what it holds (info), or empty it (clear). "
        "Every part is rebuilt when needed: scans and catalogs by scanning again, clones, releases and "
        "sdists by fetching them again.",
    )
    parser.add_argument(  # (optional to argparse, which else says PART is required too when both are missing)
        "action", nargs="?", choices=["info", "clear"], help="info: where, how big, how many; clear: remove"
    )
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"{', '.join(PARTS)} (default: all)")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="output format (default: text)")
    add_run(parser, extracts=False)
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    if args.action is None:
        parser().error("say what to do: info (where, how big, how many) or clear [PART ...]")
    from extractor.pipeline.write import dumps_document
    from extractor.repo.housekeeping import PARTS, cache_dir, clear, usage
    from extractor.util.suggest import close_to

    for name in args.parts:
        if name not in PARTS:
            hint = close_to(name, PARTS)
            raise ExtractorError(
                f"no cache part {name!r}"
                + (f"; did you mean {hint!r}?" if hint else "")
                + f" (parts: {', '.join(PARTS)})"
            )
    root = cache_dir()
    if args.action == "info":
        parts = [part for part in usage(root) if not args.parts or part.name in args.parts]
    else:
        parts = clear(root, args.parts)
    if args.format == "json":
        document = {
            "directory": str(root),
            "bytes": sum(part.bytes for part in parts),
            "parts": [{"name": p.name, "bytes": p.bytes, p.unit: p.items} for p in parts],
        }
        sys.stdout.write(dumps_document(document).decode())
        return ExitCode.OK
    done = "removed " if args.action == "clear" else ""
    total = sized(sum(part.bytes for part in parts))
    shown_root = one_line(str(root), limit=None)  # (text for people: a path's control characters escaped)
    sys.stdout.write(f"{done}{shown_root} ({total})\n" if not done else f"{done}{total} from {shown_root}\n")
    for part in parts:
        sys.stdout.write(f"  {part.name:<13} {sized(part.bytes):>9}  {part.what} ({part.unit}: {part.items})\n")
    return ExitCode.OK
