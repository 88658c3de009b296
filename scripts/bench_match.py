"""Benchmark `match` on a log: lines per second on a 200,000-line log, beside `grep -F -f` of the same anchors.

Usage: python scripts/bench_match.py [--catalog release:0.28.0] [--lines 200000] [--rounds 3] [--keep DIR]

The log is made here, the same every run (seeded): 1% of its lines are real messages of the catalog's
templates rendered with values (after an ERROR log prefix, a process tag, or alone as a traceback's last
line), the rest is noise a vLLM server writes (INFO, WARNING and DEBUG lines, HTTP access lines, tracebacks'
frames and source lines). The whole command (`python -m extractor match --catalog CATALOG < log`, the
index warm in the cache) runs on it and on a 100-line log made the same way; lines per second are
(lines - 100) / (t_big - t_small), so that what any run costs (the interpreter, the imports, the index
read) is left out. `grep -F -f anchors.txt` runs on the same log in the same rounds, its anchors every
template's literal text of MIN_KEY characters or more as the template writes it. Rounds interleave the three
so they share the machine's load; medians are printed. Exits 1 under GOAL lines per second.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extractor.catalog.spec import parse_catalogs  # noqa: E402
from extractor.pipeline.options import ExtractOptions  # noqa: E402
from extractor.query.match.index import match_index  # noqa: E402
from extractor.query.match.pattern import MatchTemplate  # noqa: E402

GOAL = 100_000  # lines per second of the whole command, the cost of any run left out
SMALL = 100  # lines of the log whose run is the cost of any run
ERROR_SHARE = 0.01
MIN_KEY = 4  # (the finder's: shorter literal text selects nothing)

_VALUES = ["4096", "0.9", "-1", "auto", "bfloat16", "'fp8_e4m3'", "None", "[1, 2, 4]", "meta-llama/Llama-3.1-8B"]
_INFO = [
    "Avg prompt throughput: {f} tokens/s, Avg generation throughput: {f} tokens/s, Running: {n} reqs, "
    "Waiting: 0 reqs, GPU KV cache usage: {f}%, Prefix cache hit rate: {f}%",
    "Started engine process with PID {n}",
    "Loading weights took {f} GB and {f} seconds",
    "Model loading took {f} GiB memory and {f} seconds",
    "# GPU blocks: {n}, # CPU blocks: {n}",
    "Maximum concurrency for 8192 tokens per request: {f}x",
    "Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not static.",
    "Graph capturing finished in {n} secs, took {f} GiB",
    "Using FlashAttention-2 backend on V1 engine.",
    "Chunked prefill is enabled with max_num_batched_tokens={n}.",
    "Automatically detected platform cuda.",
    "Received request chatcmpl-{n}: prompt: 'Hello, my name is', params: SamplingParams(n=1, temperature={f})",
    "Finished request chatcmpl-{n}.",
    "Starting vLLM API server {n} on http://0.0.0.0:8000",
    "Route: /v1/chat/completions, Methods: POST",
    "non-default args: {{'model': 'Qwen/Qwen2.5-7B-Instruct', 'max_model_len': {n}}}",
]
_WARNING = [
    "Your device 'NVIDIA A10G' (with compute capability 8.6) is not fully optimised for FP8 kernels.",
    "Default sampling parameters have been overridden by the model's Hugging Face generation config.",
    "To see benefits of async output processing, enable CUDA graph.",
]
_FRAMES = [
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line {n}, in run_engine_core',
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line {n}, in main',
    '  File "/usr/lib/python3.12/asyncio/runners.py", line {n}, in run',
    "    return self.model_executor.execute_model(scheduler_output)",
    "    engine_core = EngineCoreProc(*args, **kwargs)",
    "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    "Traceback (most recent call last):",
]


def render(template: MatchTemplate, rng: random.Random) -> str:
    """The template's message as Python prints it, each placeholder given a value, after its class."""
    out = [template.pieces[0]]
    for piece in template.pieces[1:]:
        out += [rng.choice(_VALUES), piece]
    return f"{template.errorClass}: " + "".join(out)


def stamp(rng: random.Random, level: str) -> str:
    return f"{level} 11-29 17:{rng.randrange(60):02d}:{rng.randrange(60):02d} [core.py:{rng.randrange(1, 900)}]"


def noise(rng: random.Random) -> str:
    """A line a server writes that no record raised."""
    fill = {"n": rng.randrange(1, 100_000), "f": round(rng.uniform(0, 100), 1)}
    roll = rng.random()
    if roll < 0.70:
        return f"{stamp(rng, 'INFO')} {rng.choice(_INFO).format_map(fill)}"
    if roll < 0.76:
        return f"{stamp(rng, 'WARNING')} {rng.choice(_WARNING)}"
    if roll < 0.80:
        return f"{stamp(rng, 'DEBUG')} {rng.choice(_INFO).format_map(fill)}"
    if roll < 0.88:
        return f'INFO:     127.0.0.1:{fill["n"] % 65536} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    return rng.choice(_FRAMES).format_map(fill)


def make_log(templates: list[MatchTemplate], count: int, seed: int = 7) -> tuple[list[str], int]:
    """`count` lines, ERROR_SHARE of them a rendered message of a template of the catalog (chosen alike), and
    how many those are."""
    rng = random.Random(seed)
    usable = [t for t in templates if t.pieces and not t.catch_all and "\n" not in t.errorMessage]
    log: list[str] = []
    errors = 0
    for _ in range(count):
        if rng.random() >= ERROR_SHARE:
            log.append(noise(rng))
            continue
        errors += 1
        message = render(rng.choice(usable), rng)
        roll = rng.random()
        if roll < 0.6:
            log.append(f"{stamp(rng, 'ERROR')} {message}")
        elif roll < 0.8:
            log.append(f"(EngineCore_DP0 pid={rng.randrange(100, 99_999)}) {stamp(rng, 'ERROR')} {message}")
        else:
            log.append(message)
    return log, errors


def anchors_of(templates: list[MatchTemplate]) -> list[str]:
    """Every template's literal text as it writes it (its runs between placeholders, ends trimmed), of
    MIN_KEY characters or more: what grep looks for."""
    runs = {run.strip() for t in templates for run in t.fragments()}
    return sorted(run for run in runs if len(run) >= MIN_KEY and "\n" not in run)


def timed(command: list[str], stdin: Path, stdout: Path) -> float:
    """Run a command with a file on its standard input and its output to a file; its wall time."""
    with stdin.open("rb") as source, stdout.open("wb") as sink:
        started = time.perf_counter()
        done = subprocess.run(command, stdin=source, stdout=sink, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr.decode()[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", default="release:0.28.0")
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the logs, the anchors and the answers into this folder")
    args = parser.parse_args()
    # An installed package has its bytecode compiled; an editable one under PYTHONDONTWRITEBYTECODE would compile
    # every module on every run (as scripts/bench.py does).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "extractor")], check=True)
    # The scope match reads a release in when the user names none: the whole package, every class.
    options = ExtractOptions(paths=("vllm",), exceptions=("*",))
    templates = match_index([parse_catalogs(args.catalog, repo="")], repo="", options=options).matcher.templates
    work = args.keep or Path(tempfile.mkdtemp(prefix="extractor-bench-match-"))
    work.mkdir(parents=True, exist_ok=True)
    big, small, anchors = work / "big.log", work / "small.log", work / "anchors.txt"
    lines, errors = make_log(templates, args.lines)
    big.write_text("\n".join(lines) + "\n")
    small.write_text("\n".join(make_log(templates, SMALL)[0]) + "\n")
    anchors.write_text("\n".join(anchors_of(templates)) + "\n")

    match = [sys.executable, "-m", "extractor", "match", "--catalog", args.catalog]
    cases = {
        "small": lambda: timed(match, small, work / "small.out"),
        "big": lambda: timed(match, big, work / "big.out"),
        "grep": lambda: timed(["grep", "-F", "-f", str(anchors), str(big)], Path(os.devnull), work / "grep.out"),
    }
    cases["small"]()  # warm: the index is built and cached on the first run of this code
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_number in range(args.rounds):
        for name, case in cases.items():
            times[name].append(case())
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    median = {name: statistics.median(values) for name, values in times.items()}
    answered = sum(1 for line in (work / "big.out").read_text().splitlines() if '"matches":[{' in line)
    rate = (args.lines - SMALL) / max(median["big"] - median["small"], 1e-9)
    print(f"medians of {args.rounds} interleaved rounds ({os.cpu_count()} cores), {args.catalog}:")
    print(f"  match, {SMALL}-line log               {median['small']:7.2f} s")
    shown = f"{median['big']:7.2f} s  ({answered} of {errors} error lines answered)"
    print(f"  match, {args.lines:,}-line log          {shown}")
    print(f"  grep -F -f ({len(anchors.read_text().splitlines()):,} anchors), same log  {median['grep']:7.3f} s")
    print(f"  match: {rate:,.0f} lines/s  (goal >= {GOAL:,})")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if rate >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
