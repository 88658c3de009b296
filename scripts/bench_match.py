"""Benchmark `match`: log lines per second against one release's catalog and against every release at once.

Usage: python scripts/bench_match.py [--single release:0.33.0] [--many release:0.5.0..0.33.0] [--lines 1000]
                                     [--rounds 3] [--path vllm]

Both matchers are the whole-package catalogs (`--path vllm --exception '*'`), built from the release sdists
(the first run extracts every release, which takes a while; later runs read the cached merged index). The
log is real-looking: INFO lines, traceback frames, and rendered messages of random templates of random
releases, with log prefixes, some cut, some in Markdown. In-process timings are medians of interleaved
rounds; then the whole command (`python -m extractor match --catalog MANY < log`) is timed with warm caches.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.pipeline.extract import ExtractOptions
from extractor.query.match.index import match_index
from extractor.query.match.matcher import Matcher
from extractor.query.match.pattern import MatchTemplate


def render(template: MatchTemplate, rng: random.Random) -> str:
    out = [template.pieces[0]]
    for piece in template.pieces[1:]:
        out += [str(rng.randint(1, 99999)), piece]
    return f"{template.errorClass}: " + "".join(out)


def make_log(templates: list[MatchTemplate], count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    usable = [t for t in templates if t.pieces and not t.catch_all and "\n" not in t.errorMessage]
    log = []
    for index in range(count):
        roll = rng.random()
        if roll < 0.4:
            log.append(f"INFO 11-29 17:{index % 60:02d}:18 [core.py:{index}] step {index}: 42 requests running")
        elif roll < 0.6:
            log.append(f'  File "/usr/lib/python3/site-packages/vllm/engine/x.py", line {index}, in run')
        elif roll < 0.65:
            log.append(f"(EngineCore pid={index}) ERROR 11-29 17:35:18 [core.py:{index}] EngineCore hit an exception")
        else:
            message = render(rng.choice(usable), rng)
            if roll < 0.7:
                message = message[: max(60, len(message) * 2 // 3)]
            elif roll < 0.75:
                message = f"`{message}`"
            log.append(f"ERROR 11-29 17:35:18 [core.py:123] {message}")
    return log


def measure(matcher: Matcher, log: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    matched = sum(bool(matcher.match(text).matches) for text in log)
    return time.perf_counter() - started, matched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--single", default="release:0.33.0")
    parser.add_argument("--many", default="release:0.5.0..0.33.0")
    parser.add_argument("--path", default="vllm")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    options = ExtractOptions(paths=(args.path,), exceptions=("*",))

    def progress(line: str) -> None:
        print(f"  building the merged index: {line}", file=sys.stderr, flush=True)

    single = match_index([args.single], repo="", options=options).matcher
    many_index = match_index([args.many], repo="", options=options, progress=progress)
    many = many_index.matcher
    log = make_log(many.templates, args.lines)
    measure(single, log), measure(many, log)  # warm: patterns compile on first use
    timings: dict[str, list[float]] = {"single": [], "many": []}
    matched: dict[str, int] = {}
    for _ in range(args.rounds):  # interleaved rounds: both see the same machine load
        for name, matcher in (("single", single), ("many", many)):
            seconds, matched[name] = measure(matcher, log)
            timings[name].append(seconds)
    print(f"log: {len(log)} lines; rounds: {args.rounds}")
    rates = {}
    for name, spec, matcher in (("single", args.single, single), ("many", args.many, many)):
        median = statistics.median(timings[name])
        rates[name] = len(log) / median
        print(
            f"{name:>6}: {spec} ({len(matcher.templates)} templates): median {median * 1000:7.1f} ms "
            f"{rates[name]:8.0f} lines/s, {matched[name]} lines matched"
        )
    print(f"many / single: {rates['many'] / rates['single']:.2f}x the lines per second")
    print(f"merged index: {len(many_index.labels)} releases, {len(many.templates)} templates")
    with tempfile.NamedTemporaryFile("w", suffix=".log") as handle:
        handle.write("\n".join(log) + "\n")
        handle.flush()
        command = [sys.executable, "-m", "extractor", "match", "--catalog", args.many, "--path", args.path]
        walls = []
        for _ in range(args.rounds):
            with open(handle.name) as stdin:
                started = time.perf_counter()
                subprocess.run([*command, "--exception", "*"], stdin=stdin, stdout=subprocess.DEVNULL, check=False)
                walls.append(time.perf_counter() - started)
    print(f"whole command, warm caches: median {statistics.median(walls):.2f} s for {len(log)} lines ({args.many})")


if __name__ == "__main__":
    main()
