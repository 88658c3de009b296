# Extract: the command line's default command, `extractor --sha REV` or `--release X.Y.Z`: one catalog written.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from extractor._version import __version__
from extractor.errors import ExitCode
from extractor.util.progress import counted, note, warn

if TYPE_CHECKING:
    from extractor.pipeline.options import ExtractOptions
    from extractor.repo.git.commit import Commit

from extractor.cli.options import PROG, Parser, add_repo, add_run, add_scope, commands, extract_options, parse_arguments


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Extract the raise sites of a repository at a pinned revision into a schema-v2 catalog. "
        f"Subcommands: {', '.join(commands())} (see `extractor SUBCOMMAND --help`).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_repo(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--sha", metavar="REV", help="revision: short or full SHA, tag or branch")
    which.add_argument(
        "--release",
        metavar="X.Y.Z",
        help="a vLLM release, read from its sdist on the package index pip uses (no GitHub needed); records "
        "point at the commit recorded in its vllm/_version.py",
    )
    add_scope(parser)
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="catalog root; the run writes DIR/FOLDER/records.jsonl and manifest.json, FOLDER being the full "
        "SHA (release-X.Y.Z for --release), then -PATHS-CLASSES for a scope other than the default; '-' writes "
        "the JSONL to stdout (default: output/<owner>/<name>)",
    )
    add_run(parser)
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    options = extract_options(args)
    if args.output != "-":  # (where the catalog goes can be written: checked before any work)
        from extractor.pipeline.write import OUTPUT, check_folder

        check_folder(Path(args.output) if args.output else OUTPUT)
    commit, pinned = _resolve_starting_workers(args.repo, args.sha, args.release, options)
    from extractor.pipeline.extract import extract_commit
    from extractor.pipeline.write import default_root, folder_name, write_catalog

    catalog = extract_commit(commit, options=options, pinned_sha=pinned)
    for warning in catalog.warnings:
        warn(warning)
    if args.output == "-":
        sys.stdout.buffer.writelines(catalog.pieces)
        sys.stdout.flush()
        return ExitCode.OK
    manifest = catalog.manifest_data  # (as data: the models, and pydantic, are not needed to write it)
    root = Path(args.output) if args.output else default_root(manifest["repo"])
    folder = folder_name(sha=manifest["sha"], scope=manifest["scope"], release=commit.release)
    directory = write_catalog(catalog.pieces, manifest, root / folder)
    if not args.quiet:
        counts = manifest["counts"]
        beside = f" (and {counted(catalog.beside, 'file')} read for fields and flags)" if catalog.beside else ""
        note(
            f"{counts['records']} records from {counts['filesParsed']} of {counts['filesInScope']} files{beside} "
            f"at {manifest['sha'][:12]} -> {directory}",
            no_bar=True,
        )
    return ExitCode.OK


def _resolve_starting_workers(
    repo: str, revision: str | None, release: str | None, options: ExtractOptions
) -> tuple[Commit, str | None]:
    """Resolve the revision (or the release, with the SHA its records point at), forking the extraction's
    workers first thing, before the pipeline's modules are imported: they import the parser meanwhile, on
    the other cores. None are forked if one process scans (`--jobs 1`, or one core), or if the catalog
    is in the cache already (nothing to scan: they would only take a core from this process); with no
    catalog in the cache at all, they are forked before the revision is even resolved."""
    from extractor.pipeline.cache import opened
    from extractor.pipeline.workers import processes, start_ahead
    from extractor.repo.git.commit import resolve

    workers = processes(options.jobs) - 1
    with opened(options) as cache:
        if workers > 0 and not cache.holds_catalogs():
            start_ahead(workers)
        pinned = None
        if release is not None:
            from extractor.catalog.load import release_commit

            commit, pinned = release_commit(release)
        else:
            commit = resolve(repo, revision or "")
        if workers > 0 and not cache.holds_catalog(commit, pinned):
            start_ahead(workers)  # (once: if they were forked above, nothing happens)
    return commit, pinned
