# extractor history REVISIONS: the lineage of every check across revisions, written to a folder.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from extractor.errors import ExitCode, ExtractorError, OutputError
from extractor.util import lifecycle
from extractor.util.progress import one_line, warn

if TYPE_CHECKING:
    from extractor.query.history import Revision

from extractor.cli.options import PROG, Parser, add_repo, add_run, add_scope, extract_options, output_folder, parse


def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} history",
        description="Follow every check in scope across revisions, oldest first, with diff's pairing: when it "
        "was introduced, reworded, moved, modified, removed or reintroduced. Writes DIR/history.jsonl (one "
        "lineage a line) and DIR/history.json (the revisions); with --format markdown also history.md and a "
        "chart (history.svg, history.png). Prints history.jsonl or the Markdown. A --path follows a module "
        "that becomes a package: vllm/config names vllm/config/ and vllm/config.py.",
    )
    parser.add_argument(
        "revisions",
        nargs="*",
        metavar="REVISIONS",
        help="release:all, release:A..B (inclusive) or release:X.Y.Z; or, of --repo, A..B (A, then the "
        "first-parent commits after it up to B), a tag glob such as 'v*' (sorted by version), or a revision",
    )
    parser.add_argument("--revisions", dest="more", action="append", metavar="SPEC", help="as REVISIONS, repeatable")
    add_repo(parser)
    add_scope(parser)
    parser.add_argument("--format", choices=["json", "markdown"], default="json", help="output format (default: json)")
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="where the files go (default: output/<owner>/<name>/history, then -PATHS-CLASSES for a scope "
        "other than the default)",
    )
    add_run(parser)
    return parser


def _warn_if_unordered(revisions: Sequence[Revision]) -> None:
    """Releases listed newest first are followed as listed (oldest first is the rule): say so."""
    from packaging.version import InvalidVersion, Version

    try:
        versions = [Version(r.commit.revision.removeprefix("release:")) for r in revisions]
    except InvalidVersion:  # not all releases: the order given is the user's to know
        return
    later = next((i for i in range(1, len(versions)) if versions[i] < versions[i - 1]), None)
    if later is not None:
        warn(
            "revisions are followed in the order given, oldest first expected: "
            f"{revisions[later - 1].label} comes before {revisions[later].label}"
        )


def run(argv: Sequence[str]) -> int:
    args = parse(parser(), argv)
    from extractor.pipeline.write import atomic_write_all, default_root, page_bytes
    from extractor.query.history import HISTORY, HISTORY_MANIFEST, build_history, folder_name, followed, list_revisions

    specs = [*args.revisions, *(args.more or [])]
    if not specs:
        raise ExtractorError("history needs revisions: release:all, release:A..B, or A..B / 'v*' of --repo")
    options = followed(extract_options(args))

    def log(line: str) -> None:
        if not args.quiet:
            print(f"{PROG} history: {one_line(line)}", file=sys.stderr, flush=True)

    output = output_folder(args.output, "history")
    revisions = list_revisions(specs, repo=args.repo)
    _warn_if_unordered(revisions)
    history = build_history(revisions, options=options, log=log)
    root = output if output is not None else default_root(history.repo) / folder_name(options)
    lines, manifest = history.encode()
    files = [(root / HISTORY, lines), (root / HISTORY_MANIFEST, manifest)]  # written together, or none
    if args.format == "json":
        atomic_write_all(files)
        for stale in ("history.md", "history.svg", "history.png"):  # an earlier Markdown run's, of another history
            (root / stale).unlink(missing_ok=True)
        copy = lines
    else:
        from extractor.query.changelog import render_chart, render_markdown

        title = f"History of the checks in {', '.join(options.paths)} ({history.repo})"
        files += [
            (root / f"history{suffix}", data) for suffix, data in render_chart(history.revisions, title=title).items()
        ]
        lineages = history.lineages
        page = render_markdown(lineages, history.revisions, title=title, chart="history.svg")
        atomic_write_all([*files, (root / "history.md", page_bytes(page))])
        copy = page_bytes(render_markdown(lineages, history.revisions, title=title, chart=str(root / "history.svg")))
    if 1 not in lifecycle.closed:  # (`>&-`: the files alone, as a run that writes files does)
        try:
            sys.stdout.buffer.write(copy)
            sys.stdout.flush()
        except OutputError as error:  # (a full disk, say): the files stand, the copy asked for did not come
            raise OutputError(f"{error}; the history itself is written, in {root}") from None
    log(f"{len(history.threads)} lineages over {len(history.revisions)} revisions -> {root}")
    return ExitCode.OK
