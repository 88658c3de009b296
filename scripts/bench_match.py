"""Benchmark `match`: log lines per second, indexed matcher vs trying every regex in turn, same run.

Usage: python scripts/bench_match.py [--repo PATH] [--revision v0.28.0] [--lines 1000] [--rounds 3]

By default it builds vLLM 0.28.0 from its release sdist (as the tests do) and extracts the whole
`vllm/` package (about 2,700 patterns). The log mixes rendered messages of random records with INFO
lines and traceback frames. Both matchers see the same lines; their answers are checked to agree.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.extract import ExtractOptions, extract
from extractor.match import Matcher, literal_pieces
from extractor.models import CatalogLine


class RegexLoop(Matcher):
    """The peer: no index, every pattern with literal text is tried on every line."""

    def candidates(self, text: str) -> set[int]:
        return {index for index, entry in enumerate(self.entries) if entry.coverage}


def render(line: CatalogLine, rng: random.Random) -> str:
    message = line.record.errorMessage
    out, position = [], 0
    for placeholder in line.extraction.placeholders:
        out.append(message[position : placeholder.start])
        if placeholder.debug:
            out.append(placeholder.expression + "=")
        out.append(str(rng.randint(1, 99999)))
        position = placeholder.end
    out.append(message[position:])
    return f"{line.record.errorClass}: " + "".join(out)


def make_log(lines: list[CatalogLine], count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    usable = [line for line in lines if literal_pieces(line) and "\n" not in line.record.errorMessage]
    log = []
    for index in range(count):
        roll = rng.random()
        if roll < 0.4:
            log.append(f"INFO 11-29 17:{index % 60:02d}:18 [core.py:{index}] step {index}: 42 requests running")
        elif roll < 0.6:
            log.append(f'  File "/usr/lib/python3/site-packages/vllm/engine/x.py", line {index}, in run')
        else:
            log.append(f"ERROR 11-29 17:35:18 [core.py:123] {render(rng.choice(usable), rng)}")
    return log


def measure(matcher: Matcher, log: list[str]) -> tuple[float, list[tuple[str, ...]]]:
    started = time.perf_counter()
    answers = [tuple(m.line.record.id for m in matcher.match(text).matches) for text in log]
    return time.perf_counter() - started, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", help="repository holding the revision (default: vLLM release sdists)")
    parser.add_argument("--revision", default="v0.28.0")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    repo = args.repo
    if repo is None:
        from extractor.release import release_repo

        repo = str(release_repo([args.revision.removeprefix("v")]))
    catalog = extract(repo=repo, revision=args.revision, options=ExtractOptions(paths=("vllm",)))
    lines = list(catalog.lines)
    log = make_log(lines, args.lines)
    indexed, loop = Matcher(lines), RegexLoop(lines)
    # Warm both (regexes compile on first use), and check they agree.
    _, fast = measure(indexed, log)
    _, slow = measure(loop, log)
    disagree = sum(a != b for a, b in zip(fast, slow, strict=True))
    timings: dict[str, list[float]] = {"indexed": [], "regex loop": []}
    for _ in range(args.rounds):  # interleaved rounds: both see the same machine load
        timings["indexed"].append(measure(indexed, log)[0])
        timings["regex loop"].append(measure(loop, log)[0])
    print(f"catalog: {len(lines)} patterns ({args.revision}, vllm/); log: {len(log)} lines; rounds: {args.rounds}")
    print(f"answers that differ between the two: {disagree}")
    rates = {}
    for name, values in timings.items():
        median = statistics.median(values)
        rates[name] = len(log) / median
        print(f"{name:>11}: median {median * 1000:8.1f} ms  {rates[name]:10.0f} lines/s")
    print(f"indexed / regex loop: {rates['indexed'] / rates['regex loop']:.1f}x the lines per second")


if __name__ == "__main__":
    main()
