# extractor diff OLD NEW: the changes between two catalogs, as JSON or Markdown.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from extractor.errors import ExitCode, ExtractorError
from extractor.util.progress import warn

if TYPE_CHECKING:
    from extractor.pipeline.options import ExtractOptions

from extractor.cli.options import (
    PROG,
    Parser,
    add_repo,
    add_run,
    add_scope,
    extract_options,
    latest_of,
    parse_arguments,
)


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} diff",
        description="Compare the catalogs of two revisions, releases or catalog files. Exit status: 0 no "
        "differences, 1 differences, 2 trouble.",
    )
    parser.add_argument(
        "old",
        metavar="OLD",
        help="a revision of --repo, a catalog directory or records.jsonl, or release:X.Y.Z",
    )
    parser.add_argument("new", metavar="NEW", help="the same kinds as OLD")
    add_repo(parser)
    add_scope(parser)
    add_run(parser)
    parser.add_argument("--format", choices=["json", "markdown"], default="json", help="output format (default: json)")
    parser.add_argument("--output", metavar="FILE", help="write the diff to FILE instead of stdout")
    parser.add_argument(
        "--catalog-root",
        metavar="DIR",
        help="where catalogs written earlier are reused from (default: output/<owner>/<name>)",
    )
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.catalog.load import LoadedCatalog, open_catalog
    from extractor.catalog.spec import parse_catalog
    from extractor.errors import ScopeError
    from extractor.pipeline.write import atomic_write, check_folder, page_bytes
    from extractor.query.diff import diff_catalogs, render_json, render_markdown
    from extractor.query.history.revisions import followed

    root = Path(args.catalog_root) if args.catalog_root else None
    if root is not None and root.exists() and not root.is_dir():
        raise ExtractorError(f"--catalog-root {root} is not a folder (catalogs written earlier are looked up in it)")

    def both(options: ExtractOptions) -> list[LoadedCatalog]:
        return [open_catalog(latest_of(spec, options), repo=args.repo, options=options, root=root) for spec in specs]

    options = extract_options(args)
    if args.output and args.output != "-":  # (the file's folder can be written: checked before any work)
        check_folder(Path(args.output).parent, writing=Path(args.output))
    specs = [parse_catalog(text, repo=args.repo) for text in (args.old, args.new)]
    try:
        old, new = both(options)
    except ScopeError:
        # A side where the scope's package was still a module (vllm/config.py until 0.10.1): both sides
        # follow it, as a history does.
        if followed(options) == options:
            raise
        old, new = both(followed(options))
    scopes = [catalog.manifest.scope for catalog in (old, new) if catalog.manifest is not None]
    if len(scopes) == 2 and scopes[0] != scopes[1]:
        covered = [f"{', '.join(s.paths)} ({', '.join(s.exceptions)}, context {s.context})" for s in scopes]
        warn(
            f"the catalogs cover different scopes ({covered[0]}; {covered[1]}): what only one covers shows as added "
            "or removed"
        )
    if args.output and args.output != "-":
        from extractor.pipeline.write import MANIFEST, RECORDS

        target = Path(args.output).resolve()
        for spec in (args.old, args.new):
            folder = Path(spec).resolve() if Path(spec).is_dir() else Path(spec).resolve().parent
            if target in (Path(spec).resolve(), folder / RECORDS, folder / MANIFEST):
                raise ExtractorError(f"--output {args.output} is a file of the catalog {spec}: not overwriting it")
    diff = diff_catalogs(old, new)
    data = render_json(diff) if args.format == "json" else page_bytes(render_markdown(diff))
    if args.output and args.output != "-":
        atomic_write(Path(args.output), data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return ExitCode.DIFFERENCES if diff.differs else ExitCode.OK
