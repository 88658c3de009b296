# extractor reproduce: raise each record's error in the codebase itself (a runtime where it is installed), and
# check the change that makes it go away.
from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from extractor.cli.options import PROG, Parser, add_catalog, extract_options, latest_of, parse_arguments, step_log
from extractor.errors import ExitCode, ExtractorError
from extractor.util.progress import counted

if TYPE_CHECKING:
    from extractor.model.records import Reproduction

_LONGEST = 3600.0  # seconds: an attempt's limit past which a run of 200 records would take days
_TIMEOUT = 20.0  # seconds an attempt may take unless --timeout says
_RUNTIMES = 2  # runtimes side by side unless --jobs says


def _seconds(text: str) -> float:
    """A time limit: a finite number of seconds, more than 0 (nan, inf and 0 are no limit an attempt can keep)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= _LONGEST:  # (false for nan)
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds more than 0 and at most {_LONGEST:.0f}, got {text}"
        )
    return value


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
        "--timeout",
        type=_seconds,
        default=_TIMEOUT,
        metavar="SECONDS",
        help=f"time one attempt may take, more than 0 and at most {_LONGEST:.0f} (default: {_TIMEOUT:.0f})",
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
    from extractor.catalog.load import open_catalog
    from extractor.catalog.spec import Release, parse_catalog
    from extractor.query import reproductions as store

    say = step_log("reproduce", args)

    options = extract_options(args)
    spec = latest_of(parse_catalog(args.catalog, repo=args.repo), options)
    release = spec.version if isinstance(spec, Release) else None  # (`release:v0.28.0`, a bare `0.28.0`: 0.28.0)
    if release is None and args.runtime is None:
        raise ExtractorError("name the interpreter where vLLM is installed with --runtime (or give release:X.Y.Z)")
    if args.runtime is not None:  # (checked before anything kept is shown as run against it)
        _check_runtime(args.runtime, release)
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
        cached = release if release and options.cache else None

        def keep(ident: str, reproduction: Reproduction) -> None:  # (as each record finishes: a kill loses none)
            if cached:
                store.add("vllm", cached, keys[ident], reproduction)

        made = _run_missing(args, release, missing, say, keep)
        found.update(made)
        if cached:  # (the store made whole again: one line a key, in order)
            store.save("vllm", cached, {keys[ident]: reproduction for ident, reproduction in made.items()})
    elif lines:
        say(
            f"nothing was run: all {len(lines)} records were run before (for this release and this extractor) "
            "and are shown as kept"
        )
    import orjson

    for line in lines:
        record = line.record
        shown = found[record.id].model_dump(mode="json", exclude_none=True)
        head = {"id": record.id, "filePath": record.filePath, "lineNumber": record.lineNumber}
        sys.stdout.write(orjson.dumps({**head, "reproduction": shown}).decode() + "\n")
    sys.stdout.flush()
    results = [found[line.record.id] for line in lines]
    counts = Counter("reproduced" if r.reproduced else str(r.reason) for r in results)
    fixed = sum(1 for r in results if r.fix is not None or r.solutions)
    served = sum(1 for r in results if r.level == "serve")
    served_fixed = sum(1 for r in results if r.level == "serve" and r.solutions)
    missed = ", ".join(f"{count} {reason}" for reason, count in counts.most_common() if reason != "reproduced")
    say(
        f"{counts['reproduced']} of {len(results)} reproduced ({fixed} with a fix verified), {served} at the "
        f"vllm serve level ({served_fixed} with a serve fix)" + (f"; {missed}" if missed else "")
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
    from extractor.reproduce.validation import catalog_facts

    attached = []
    for line in lines:
        reproduction = found.get(line.record.id)
        if reproduction is not None:
            line = line.model_copy(
                update={"extraction": line.extraction.model_copy(update={"reproduction": reproduction})}
            )
        attached.append(line)
    facts = catalog_facts(attached)  # (what the records tell each other's validationCode)
    filled = [fill(line, found.get(line.record.id), catalog=facts) for line in attached]
    manifest = catalog.manifest
    if manifest is None:
        raise ExtractorError("the catalog has no manifest to write beside its records")
    folder = write_catalog(encode_lines(filled), manifest, Path(output))
    said = sum(1 for line in filled if line.record.exampleFix)
    say(f"wrote {len(filled)} records ({said} with a fix that ran) to {folder}")


def _check_runtime(python: str, release: str | None) -> None:
    """A one-line error unless `python` runs and has vLLM (of the release, for a release's catalog)."""
    from extractor.reproduce.runtime import installed

    version = installed(python, "vllm")
    if release and version is not None and version != release:
        raise ExtractorError(f"the runtime {python} has vllm {version}, not {release}")


def _jobs(asked: int | None, records: int) -> int:
    """How many runtimes run side by side: --jobs (default _RUNTIMES), never more than the cores this process may
    run on, nor than the records to run."""
    from extractor.pipeline.workers import processes

    return max(1, min(processes(asked or _RUNTIMES), records))


def _run_missing(
    args: argparse.Namespace,
    release: str | None,
    lines: list[Any],
    say: Any,
    keep: Callable[[str, Reproduction], None],
) -> dict[str, Reproduction]:
    """Run the records not kept: in the runtime (made first, when needed: `release` is set without --runtime),
    several side by side, started together; each result given to `keep` as it comes. Ctrl-C stops the runtimes
    and all they started at once."""
    from extractor.query.match.matcher import Matcher
    from extractor.reproduce.runtime import ensure_runtime, sessions
    from extractor.reproduce.verify import PLATFORM, WARM, as_reproduction, reproduce
    from extractor.util.progress import bar

    python = args.runtime or ensure_runtime("vllm", str(release), progress=say)
    jobs = _jobs(args.jobs, len(lines))
    made: dict[str, Reproduction] = {}
    options = {"preload": ("vllm.config",), "warm": WARM, "environment": PLATFORM}
    with sessions(python, "vllm", count=jobs, **options) as running:  # type: ignore[arg-type]
        first = running[0]
        if release and first.version != release:
            raise ExtractorError(f"the runtime {python} has vllm {first.version}, not {release}")
        runtimes = f" ({jobs} runtimes side by side)" if jobs > 1 else ""
        to_run = counted(len(lines), "record")
        say(f"vllm {first.version} imported in {first.seconds:.1f} s; {to_run} to run{runtimes}")
        verified_with = f"vllm=={first.version}"
        results = reproduce(lines, running, Matcher.of_lines(lines), verified_with=verified_with, timeout=args.timeout)
        reproduced = 0

        def status() -> str:  # (the records come back in order: the first not back is under way)
            at = f", at {lines[len(made)].record.slug}" if len(made) < len(lines) else ""
            return f"{reproduced} reproduced{at}"

        for result in bar(_taken(results), len(lines), "reproduce", size=lambda _: 1, unit="record", status=status):
            reproduction = as_reproduction(result, verified_with)
            made[result["id"]] = reproduction
            reproduced += reproduction.reproduced
            keep(result["id"], reproduction)
    return made


def _taken(results: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The results, made by a thread of their own and taken here: a stop signal lands in this thread, never inside
    the runs' pool (which would wait for the attempts under way), and the runtimes are stopped at once."""
    import queue
    import threading

    taken: queue.Queue[tuple[str, Any]] = queue.Queue()

    def make() -> None:
        try:
            for result in results:
                taken.put(("result", result))
        except BaseException as error:  # (said where it is taken)
            taken.put(("error", error))
        else:
            taken.put(("done", None))

    threading.Thread(target=make, daemon=True, name="reproduce").start()
    while True:
        kind, value = taken.get()
        if kind == "done":
            return
        if kind == "error":
            raise value
        yield value
