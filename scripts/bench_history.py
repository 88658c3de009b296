"""Benchmark the history: building the release repository from the sdists, the history of every release
(config scope and whole package, cold and warm cache, peak memory, cache growth), and a synthetic linear
history of N commits made from the releases' files (time per commit).

    python scripts/bench_history.py [--part repo|releases|synthetic|all] [--commits 2000]

Every run is a `python -m extractor` subprocess with its own user cache directory (XDG_CACHE_HOME); the
sdists are read from the usual cache (downloaded there first). Times are wall-clock seconds on whatever
machine runs this: quote ratios, or say how loaded the machine was.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extractor.repo.housekeeping import cache_dir
from extractor.repo.release import fetch_sdist, release_repo, resolve_releases


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(args: list[str], cache: Path) -> tuple[float, int]:
    """Run the extractor; return (seconds, peak RSS in MiB of the largest process it started), and print
    the CPU time it took (user + system, all its processes): on a shared machine, the figure to quote."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    cpu = _cpu()
    started = time.monotonic()
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    result = subprocess.run([sys.executable, "-m", "extractor", *args], env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"extractor {' '.join(args)} failed: {result.stderr[-500:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"  ({args[0]} {args[1]}: {seconds:.1f} s wall, {_cpu() - cpu:.1f} s CPU)", flush=True)
    return seconds, max(peak, before) // 1024


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _fresh_cache(root: Path, repo: Path | None) -> Path:
    """A user cache holding only the sdists (linked) and the release repository (copied)."""
    cache = root / f"cache-{time.monotonic_ns()}"
    (cache / "extractor" / "releases").mkdir(parents=True)
    (cache / "extractor" / "sdists").symlink_to(cache_dir() / "sdists")
    if repo is not None:
        shutil.copytree(repo, cache / "extractor" / "releases" / "vllm.git")
    return cache


def bench_repo(versions: list[str], root: Path) -> Path:
    sdists = [fetch_sdist(version) for version in versions]  # downloaded once, outside the timing
    started = time.monotonic()
    for sdist in sdists:  # the floor: decompress and walk every tarball once, keeping nothing
        with tarfile.open(sdist.path, "r|gz") as archive:
            for member in archive:
                if member.isfile():
                    stream = archive.extractfile(member)
                    if stream is not None:
                        stream.read()
    floor = time.monotonic() - started
    target = root / "vllm.git"
    started = time.monotonic()
    release_repo(versions, repo=target)
    built = time.monotonic() - started
    size = sum(s.path.stat().st_size for s in sdists) / 2**20
    print(
        f"release repository: {len(versions)} sdists ({size:.0f} MiB) in {built:.1f} s; reading the tarballs "
        f"alone {floor:.1f} s ({built / floor:.2f}x); repository {_size(target) / 2**20:.0f} MiB"
    )
    return target


def bench_releases(repo: Path, root: Path) -> None:
    for label, scope in (
        ("config", ["--path", "vllm/config", "--path", "vllm/config.py"]),
        ("whole package", ["--path", "vllm", "--exception", "*"]),
    ):
        cache = _fresh_cache(root, repo)
        args = ["history", "release:all", *scope, "--output", str(root / "out"), "--quiet"]
        cold, cold_peak = _run(args, cache)
        grown = _size(cache / "extractor") - _size(cache / "extractor" / "releases")
        warm, warm_peak = _run(args, cache)
        print(
            f"history release:all, {label}: cold {cold:.1f} s (peak {cold_peak} MiB, cache +{grown / 2**20:.0f} "
            f"MiB), warm {warm:.1f} s (peak {warm_peak} MiB)"
        )


def synthetic_repo(
    target: Path,
    commits: int,
    *,
    versions: tuple[str, ...] = ("0.27.0", "0.28.0", "0.33.0"),
    scope: str = "vllm/config",
    per_commit: int = 3,
) -> None:
    """A linear history: the newest release's `vllm/`, then `commits` commits each setting `per_commit`
    files under `scope` to their next version among the releases' (cycling)."""
    trees: list[dict[str, bytes]] = []
    for version in versions:
        with tarfile.open(fetch_sdist(version).path, "r|gz") as archive:
            files = {}
            for member in archive:
                path = member.name.partition("/")[2]
                if path.startswith("vllm/") and member.isfile() and (stream := archive.extractfile(member)):
                    files[path] = stream.read()
            trees.append(files)
    changing = sorted(p for p in trees[-1] if p.startswith(scope) and len({t.get(p) for t in trees} - {None}) > 1)
    state = {path: 0 for path in changing}
    out = [b"commit refs/heads/main\ncommitter bench <bench@example.invalid> 1700000000 +0000\ndata 4\nbase\n"]
    out += [
        f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n"
        for path, data in sorted(trees[-1].items())
    ]
    for number in range(commits):
        out.append(
            f"commit refs/heads/main\ncommitter bench <bench@example.invalid> {1700000001 + number} +0000\n"
            f"data 6\nc{number:04d}\n".encode()
        )
        for k in range(per_commit):
            path = changing[(number * per_commit + k) % len(changing)]
            versions_of = [t[path] for t in trees if path in t]
            state[path] = (state[path] + 1) % len(versions_of)
            data = versions_of[state[path]]
            out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    subprocess.run(["git", "init", "--quiet", "--bare", str(target)], check=True)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=target, input=b"".join(out), check=True)
    subprocess.run(["git", "tag", "base", "main~" + str(commits)], cwd=target, check=True)


def bench_synthetic(root: Path, commits: int) -> None:
    target = root / "synthetic.git"
    synthetic_repo(target, commits)
    cache = _fresh_cache(root, None)
    for label in ("cold", "warm"):
        seconds, peak = _run(
            ["history", "base..main", "--repo", str(target), "--output", str(root / "syn"), "--quiet"], cache
        )
        print(
            f"synthetic linear history, {commits} commits of 3 changed files under vllm/config, {label}: "
            f"{seconds:.1f} s, {1000 * seconds / (commits + 1):.0f} ms per commit (peak {peak} MiB)"
        )
    small, _ = _run(
        ["history", f"main~{commits // 10}..main", "--repo", str(target), "--output", str(root / "syn"), "--quiet"],
        cache,
    )
    print(f"  the last {commits // 10} commits only, warm: {1000 * small / (commits // 10 + 1):.0f} ms per commit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["repo", "releases", "synthetic", "all"], default="all")
    parser.add_argument("--commits", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        root = Path(scratch)
        versions = resolve_releases("all")
        if args.part in ("repo", "releases", "all"):
            repo = bench_repo(versions, root) if args.part != "releases" else release_repo(versions)
        if args.part in ("releases", "all"):
            bench_releases(repo, root)
        if args.part in ("synthetic", "all"):
            bench_synthetic(root, args.commits)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
