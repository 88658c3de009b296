# extractor history REVISIONS: the lineage of every check across revisions, written to a folder.
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from extractor.errors import ExitCode, ExtractorError, OutputError
from extractor.util import lifecycle
from extractor.util.progress import warn

if TYPE_CHECKING:
    from extractor.query.history.revisions import Revision

from extractor.cli.options import (
    PROG,
    Parser,
    add_repo,
    add_run,
    add_scope,
    extract_options,
    output_folder,
    parse_arguments,
    step_log,
)


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

    from extractor.catalog.spec import release_of

    try:
        versions = [Version(release_of(r.commit.revision) or r.commit.revision) for r in revisions]
    except InvalidVersion:  # not all releases: the order given is the user's to know
        return
    later = next((i for i in range(1, len(versions)) if versions[i] < versions[i - 1]), None)
    if later is not None:
        warn(
            "revisions are followed in the order given, oldest first expected: "
            f"{revisions[later - 1].label} comes before {revisions[later].label}"
        )


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.catalog.spec import parse_revisions
    from extractor.query.history.lineage import build_history
    from extractor.query.history.revisions import followed, list_revisions
    from extractor.query.history.store import write_history

    specs = [*args.revisions, *(args.more or [])]
    if not specs:
        raise ExtractorError("history needs revisions: release:all, release:A..B, or A..B / 'v*' of --repo")
    options = followed(extract_options(args))

    log = step_log("history", args)

    output = output_folder(args.output, "history")
    revisions = list_revisions([parse_revisions(text) for text in specs], repo=args.repo)
    _warn_if_unordered(revisions)
    history = build_history(revisions, options=options, log=log)
    written = write_history(history, folder=output, markdown=args.format == "markdown")
    if not lifecycle.started_closed(1):  # (`>&-`: the files alone, as a run that writes files does)
        try:
            sys.stdout.buffer.write(written.printed)
            sys.stdout.flush()
        except OutputError as error:  # (a full disk, say): the files stand, the copy asked for did not come
            raise OutputError(f"{error}; the history itself is written, in {written.folder}") from None
    log(f"{len(history.threads)} lineages over {len(history.revisions)} revisions -> {written.folder}")
    return ExitCode.OK
