"""Measure the two choices docs/contributing/design.md explains, on real vLLM source (a release sdist from
the package index, built into the release repository as every command does):

1. parsing: CPython's `ast.parse` against `libcst.parse_module`, and libcst's metadata resolution
   (PositionProvider, ParentNodeProvider; each timed alone, on modules already parsed), over vllm/config
   and the whole vllm/ package (`--scope` picks one);
2. reading every `.py` blob of the package's tree: `git cat-file --batch` (extractor.repo.git) against GitPython
   (skipped with a message when GitPython is not installed; it is no dependency of the extractor).

    python scripts/measure_design.py [--release 0.28.0] [--runs 3] [--part parse|git|all] [--scope vllm]

Each figure is the median of --runs runs, wall-clock seconds in this process (the sources are read into
memory first for the parse figures); quote ratios, or say how loaded the machine was.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import libcst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from extractor.repo.git.blobs import list_blobs, read_blobs
from extractor.repo.git.commit import Commit, resolve
from extractor.repo.release import release_repo, release_tag


def median_seconds(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def sources(commit: Commit, prefix: str) -> list[str]:
    """The package's Python files under `prefix` that CPython parses (what the extractor would scan)."""
    out = []
    for _, data in read_blobs(commit, list_blobs(commit, [prefix])):
        text = data.decode("utf-8", "replace")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        out.append(text)
    return out


def resolve_all(modules: list[libcst.Module], provider: type) -> None:
    for module in modules:
        MetadataWrapper(module, unsafe_skip_copy=True).resolve(provider)


def measure_parse(commit: Commit, runs: int, scopes: list[str]) -> None:
    print("| scope | files | lines | ast.parse | libcst.parse_module | PositionProvider | ParentNodeProvider |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for prefix in scopes:
        texts = sources(commit, prefix)
        lines = sum(text.count("\n") for text in texts)
        parsed = median_seconds(lambda texts=texts: [ast.parse(text) for text in texts], runs)
        modules: list[libcst.Module] = []

        def cst(texts: list[str] = texts, modules: list[libcst.Module] = modules) -> None:
            modules[:] = [libcst.parse_module(text) for text in texts]

        parsed_cst = median_seconds(cst, runs)
        positions = median_seconds(
            lambda modules=modules: [
                MetadataWrapper(m, unsafe_skip_copy=True).resolve(PositionProvider) for m in modules
            ],
            runs,
        )
        parents = median_seconds(
            lambda modules=modules: [
                MetadataWrapper(m, unsafe_skip_copy=True).resolve(ParentNodeProvider) for m in modules
            ],
            runs,
        )
        print(
            f"| {prefix}/ | {len(texts)} | {lines:,} | {parsed:.2f} s | {parsed_cst:.2f} s ({parsed_cst / parsed:.0f}x)"
            f" | {positions:.2f} s | {parents:.2f} s |",
            flush=True,
        )


def measure_git(commit: Commit, runs: int) -> None:
    blobs = list_blobs(commit, ["vllm"])
    size = 0

    def batch() -> None:
        nonlocal size
        size = sum(len(data) for _, data in read_blobs(commit, blobs))

    batch_seconds = median_seconds(batch, runs)
    print(f"git cat-file --batch (extractor.repo.git): {len(blobs)} blobs, {size / 1e6:.1f} MB: {batch_seconds:.2f} s")
    try:
        import git as gitpython  # GitPython
    except ImportError:
        print("GitPython is not installed (pip install gitpython): its figure is skipped")
        return

    def with_gitpython(odbt: type) -> None:
        repo = gitpython.Repo(commit.git_dir, odbt=odbt)
        tree = repo.commit(commit.sha).tree / "vllm"
        total = 0
        for item in tree.traverse():
            if item.type == "blob" and item.path.endswith(".py"):
                total += len(item.data_stream.read())
        repo.close()
        assert total == size, (total, size)

    for name, odbt in (("git cat-file", gitpython.GitCmdObjectDB), ("pure-Python gitdb", gitpython.GitDB)):
        seconds = median_seconds(lambda odbt=odbt: with_gitpython(odbt), runs)
        print(
            f"GitPython {gitpython.__version__} (tree.traverse, blob.data_stream, {name} object database): "
            f"{seconds:.2f} s ({seconds / batch_seconds:.1f}x the batch)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", default="0.28.0")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--part", choices=("parse", "git", "all"), default="all")
    parser.add_argument("--scope", choices=("vllm/config", "vllm"), action="append", help="default: both")
    args = parser.parse_args()
    repo = release_repo([args.release])
    commit = resolve(str(repo), release_tag(args.release))
    print(f"vLLM {args.release} ({commit.sha[:12]}), median of {args.runs} runs")
    if args.part in ("git", "all"):
        measure_git(commit, args.runs)
    if args.part in ("parse", "all"):
        measure_parse(commit, args.runs, args.scope or ["vllm/config", "vllm"])


if __name__ == "__main__":
    main()
