"""Benchmark the extractor against semgrep and ast-grep on the same vLLM trees, interleaved, with medians.

Usage: python scripts/bench.py [--rounds 5] [--peers-venv DIR]

The peers are installed from PyPI into their own virtual environment (default: the user cache's
extractor/bench-peers), never into the project's. vLLM 0.27.0 and 0.28.0 come from their release
sdists, as in the tests; the peers search a `git archive` of the same trees. Every case runs once per
round, rounds interleave the tools so they share the machine's load, and the medians and their ratios
are printed, with the peak memory (summed over the process tree) of the extractor's whole-package run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extractor.repo.housekeeping import cache_dir  # noqa: E402
from extractor.repo.release import release_repo  # noqa: E402


def peers(venv: Path) -> tuple[Path, Path]:
    """Install semgrep and ast-grep into their own environment (once) and return their executables."""
    semgrep, ast_grep = venv / "bin" / "semgrep", venv / "bin" / "ast-grep"
    if not (semgrep.exists() and ast_grep.exists()):
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "semgrep", "ast-grep-cli"], check=True)
    return semgrep, ast_grep


def tree_rss(pid: int) -> int:
    """Sum the resident memory of a process and its descendants, in bytes."""
    total = 0
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except OSError:
            continue
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/statm") as stream:
                total += int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
        stack += children.get(current, [])
    return total


def run(command: list[str], env: dict[str, str] | None = None, measure_memory: bool = False) -> tuple[float, int]:
    """Run a command to completion; return its wall time and (optionally) the peak RSS of its tree."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    peak = 0
    if measure_memory:
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, tree_rss(process.pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    _, err = process.communicate()
    elapsed = time.perf_counter() - started
    if measure_memory:
        done.set()
        sampler.join()
    if process.returncode not in (0, 1):
        raise SystemExit(f"failed ({process.returncode}): {' '.join(command)}\n{err.decode()[-2000:]}")
    return elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peers-venv", type=Path, default=cache_dir() / "bench-peers")
    args = parser.parse_args()
    semgrep, ast_grep = peers(args.peers_venv)
    # An installed package has its bytecode compiled (pip does it at install time); an editable install
    # under PYTHONDONTWRITEBYTECODE never gets any, and would compile every module on every run.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "extractor")], check=True)
    repo = release_repo(["0.27.0", "0.28.0"])
    work = Path(tempfile.mkdtemp(prefix="extractor-bench-"))
    tree = work / "tree-0.28.0"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", "v0.28.0", "vllm"], cwd=repo, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)

    base_env = {**os.environ, "SOURCE_DATE_EPOCH": "1767225600", "CI": "1"}
    extractor = [sys.executable, "-m", "extractor", "--repo", str(repo)]
    semgrep_flags = ["scan", "--metrics=off", "--disable-version-check", "--quiet", "--lang", "python", "--json"]

    def cache_env(name: str) -> dict[str, str]:
        return {**base_env, "XDG_CACHE_HOME": str(work / name)}

    def cold(name: str, extra: list[str], memory: bool = False) -> tuple[float, int]:
        shutil.rmtree(work / name, ignore_errors=True)
        return run([*extractor, "--output", str(work / "out"), *extra], cache_env(name), memory)

    config = ["--sha", "v0.28.0"]
    everything = ["--sha", "v0.28.0", "--path", "vllm", "--exception", "*"]
    # The warm cases reuse a cache filled once before the rounds.
    run([*extractor, "--output", str(work / "out"), *config], cache_env("warm"))

    def after_027() -> tuple[float, int]:
        shutil.rmtree(work / "incremental", ignore_errors=True)
        previous = ["--sha", "v0.27.0", "--path", "vllm", "--exception", "*"]
        run([*extractor, "--output", str(work / "out"), *previous], cache_env("incremental"))
        return run([*extractor, "--output", str(work / "out"), *everything], cache_env("incremental"))

    cases = {
        "config: semgrep 'raise ValueError(...)'": lambda: run(
            [str(semgrep), *semgrep_flags, "-e", "raise ValueError(...)", str(tree / "vllm" / "config")], base_env
        ),
        "config: extractor cold": lambda: cold("cold-config", config),
        "config: extractor warm": lambda: run([*extractor, "--output", str(work / "out"), *config], cache_env("warm")),
        "vllm/: semgrep 'raise $E(...)'": lambda: run(
            [str(semgrep), *semgrep_flags, "-e", "raise $E(...)", str(tree / "vllm")], base_env
        ),
        "vllm/: ast-grep 'raise $E($$$)'": lambda: run(
            [str(ast_grep), "run", "-p", "raise $E($$$)", "-l", "python", "--json=compact", str(tree / "vllm")],
            base_env,
        ),
        "vllm/: extractor cold, every class": lambda: cold("cold-all", everything),
        "vllm/: extractor 0.28.0 after 0.27.0": after_027,
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    peaks: list[int] = []
    for round_number in range(args.rounds):
        for name, case in cases.items():
            elapsed, peak = case()
            times[name].append(elapsed)
            if peak:
                peaks.append(peak)
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)
    # Memory is sampled in a run of its own: reading /proc every 10 ms costs time the rounds should not pay.
    peaks.append(cold("cold-all", everything, memory=True)[1])
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"medians of {args.rounds} interleaved rounds ({os.cpu_count()} cores):")
    for name, value in median.items():
        print(f"  {name:<42} {value:7.2f} s")
    semgrep_config = median["config: semgrep 'raise ValueError(...)'"]
    semgrep_all = median["vllm/: semgrep 'raise $E(...)'"]
    cold_all = median["vllm/: extractor cold, every class"]
    print("ratios (goal):")
    print(f"  config cold / semgrep          {median['config: extractor cold'] / semgrep_config:.3f}  (<= 0.2)")
    print(f"  config warm / semgrep          {median['config: extractor warm'] / semgrep_config:.3f}  (<= 0.1)")
    print(f"  vllm/ cold / semgrep           {cold_all / semgrep_all:.3f}  (<= 0.12)")
    ast_grep_all = median["vllm/: ast-grep 'raise $E($$$)'"]
    print(f"  vllm/ cold / ast-grep          {cold_all / ast_grep_all:.2f}")
    print(f"  0.28 after 0.27 / 0.28 cold    {median['vllm/: extractor 0.28.0 after 0.27.0'] / cold_all:.3f}  (<= 0.5)")
    print(f"  peak memory, vllm/ cold        {max(peaks) / 2**20:.0f} MiB  (<= 512)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
