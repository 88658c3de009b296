# extractor reproduce: raise each record's error in the codebase itself (a runtime where it is installed), and
# check the change that makes it go away.
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from extractor.cli.options import PROG, Parser, add_catalog, extract_options, latest_of, parse_arguments, step_log
from extractor.errors import ExitCode, ExtractorError
from extractor.pipeline.write import RELEASE_PREFIX

if TYPE_CHECKING:
    from extractor.model.records import Reproduction

def parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=f"{PROG} reproduce",
        description="Build each record's config in vLLM itself with arguments its conditions call for, keep the "
        "error only when it comes from the record's own raise (and match answers it with the record), then run "
        "the change that makes the check pass. Writes one JSON line per record (`reproduction`, or `reason`) "
        "and counts per reason on stderr. Exit status: 0 done, 2 trouble.",
    )
    add_catalog(parser)
    parser.add_argument(
        "--runtime",
        metavar="PYTHON",
        help="an interpreter where vLLM is installed (default: for release:X.Y.Z, a virtual environment with "
        "vllm==X.Y.Z in the user cache, made by pip the first time: several GB)",
    )
    parser.add_argument(
        "--timeout", type=float, default=20.0, metavar="SECONDS", help="time one attempt may take (default: 20)"
    )
    parser.add_argument(
        "--record",
        metavar="SLUG_OR_ID",
        action="append",
        help="run only this record (its slug, id, or words of its message, as explain finds it); repeatable",
    )
    parser.add_argument(
        "--output",
        metavar="DIR",
        help="also write the catalog to DIR (records.jsonl and manifest.json, the records in the catalog's order), "
        "each reproduced record's second half (exampleFix, solutions, validationCode, ...) filled from what ran",
    )
    return parser


def run(argv: Sequence[str]) -> int:
    args = parse_arguments(parser(), argv)
    from extractor.catalog.load import open_catalog, release_named
    from extractor.query import reproductions as store

    say = step_log("reproduce", args)

    options = extract_options(args)
    spec = latest_of(args.catalog, options)
    release = release_named(spec, repo=args.repo)  # (`release:v0.28.0`, a bare `0.28.0`: the release)
    if release is not None:
        spec = f"{RELEASE_PREFIX}{release}"
    elif args.runtime is None:
        raise ExtractorError("name the interpreter where vLLM is installed with --runtime (or give release:X.Y.Z)")
    catalog = open_catalog(spec, repo=args.repo, options=options)
    every = list(catalog.lines)
    lines = _chosen(every, args.record) if args.record else every
    if args.output:
        from pathlib import Path

        from extractor.pipeline.write import check_folder

        check_folder(Path(args.output))
    # What was run before for this release, this record as it is and this extractor: not run again.
    kept = store.load("vllm", release) if release and options.cache else {}
    keys = {line.record.id: store.key(line) for line in lines}
    found = {ident: kept[key] for ident, key in keys.items() if key in kept}
    missing = [line for line in lines if line.record.id not in found]
    if missing:
        made = _run_missing(args, release, missing, say)
        found.update(made)
        if release and options.cache:
            store.save("vllm", release, {keys[ident]: reproduction for ident, reproduction in made.items()})
    elif lines:
        say(f"all {len(lines)} records were run before (for this release and this extractor): shown as kept")
    import orjson

    for line in lines:
        record = line.record
        shown = found[record.id].model_dump(mode="json", exclude_none=True)
        head = {"id": record.id, "filePath": record.filePath, "lineNumber": record.lineNumber}
        sys.stdout.write(orjson.dumps({**head, "reproduction": shown}).decode() + "\n")
    sys.stdout.flush()
    results = [found[line.record.id] for line in lines]
    counts = Counter("reproduced" if r.python else str(r.reason) for r in results)
    fixed = sum(1 for r in results if r.fix is not None or r.solutions)
    served = sum(1 for r in results if r.level == "serve")
    served_fixed = sum(1 for r in results if r.level == "serve" and r.solutions)
    say(
        f"{counts.pop('reproduced', 0)} of {len(results)} reproduced ({fixed} with a fix verified), {served} at the "
        f"vllm serve level ({served_fixed} with a serve fix); "
        + ", ".join(f"{count} {reason}" for reason, count in counts.most_common())
    )
    if args.output:
        _write(catalog, every, found, args.output, say)
    return ExitCode.OK


def _chosen(lines: list[Any], wanted: list[str]) -> list[Any]:
    """The records --record names, found as explain finds one (slug, id, words of its message)."""
    from extractor.query.explain import find

    chosen: set[str] = set()
    for text in wanted:
        found = find(lines, text)
        if found is None:
            raise ExtractorError(f"--record {text}: no record of the catalog answers it")
        chosen.add(found.line.record.id)
    return [line for line in lines if line.record.id in chosen]


def _write(catalog: Any, lines: list[Any], found: dict[str, Reproduction], output: str, say: Any) -> None:
    """The catalog, in its order, each record with its reproduction and the second half filled from it."""
    from pathlib import Path

    from extractor.pipeline.write import encode_lines, write_catalog
    from extractor.reproduce.filled import fill

    filled = []
    for line in lines:
        reproduction = found.get(line.record.id)
        if reproduction is not None:
            extraction = line.extraction.model_copy(update={"reproduction": reproduction})
            line = fill(line.model_copy(update={"extraction": extraction}), reproduction)
        filled.append(line)
    manifest = catalog.manifest
    if manifest is None:
        raise ExtractorError("the catalog has no manifest to write beside its records")
    folder = write_catalog(encode_lines(filled), manifest, Path(output))
    said = sum(1 for line in filled if line.record.exampleFix)
    say(f"wrote {len(filled)} records ({said} with a fix that ran) to {folder}")


def _run_missing(args: argparse.Namespace, release: str | None, lines: list[Any], say: Any) -> dict[str, Reproduction]:
    """Run the records not kept: in the runtime (made first, when needed: `release` is set without --runtime),
    two side by side."""
    from extractor.query.match.matcher import Matcher
    from extractor.reproduce.runtime import ensure_runtime
    from extractor.reproduce.verify import as_reproduction, reproduce, vllm_session
    from extractor.util.progress import bar

    python = args.runtime or ensure_runtime("vllm", str(release), progress=say)
    jobs = args.jobs or min(2, os.cpu_count() or 1)  # runtimes side by side (and the extraction's processes)
    made: dict[str, Reproduction] = {}
    with contextlib.ExitStack() as stack:
        sessions = [
            stack.enter_context(vllm_session(python))
            for _ in range(jobs)
        ]
        running = sessions[0]
        if release and running.version != release:
            raise ExtractorError(f"the runtime {python} has vllm {running.version}, not {release}")
        say(f"vllm {running.version} imported in {running.seconds:.1f} s; {len(lines)} records to run")
        verified_with = f"vllm=={running.version}"
        results = reproduce(lines, sessions, Matcher.of_lines(lines), verified_with=verified_with, timeout=args.timeout)
        for result in bar(results, len(lines), "reproduce", size=lambda _: 1, unit="record"):
            made[result["id"]] = as_reproduction(result, verified_with)
    return made
