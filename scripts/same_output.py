"""Check that the tree's code writes the same bytes as another revision's: catalogs, a history and a site.

    python scripts/same_output.py --base main~3            # vLLM 0.27.0, 0.28.0 and 0.33.0, both scopes
    python scripts/same_output.py --base v0.1 --releases 0.28.0

Each side runs as a command line from its own copy of the code (the base is exported with `git archive`),
writing into the same folder in turn, with the same SOURCE_DATE_EPOCH and the same user cache (release sdists
are downloaded once; cache keys hold a digest of the code, so neither side reads what the other wrote), and
--no-cache for the scans. For every scope: the catalog of each release (`--release X`), then a history of
all the releases and a site of the newest catalog with that history. Exits 1, naming the first files that
differ, when any output differs.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCOPES = {"config": [], "all": ["--path", "vllm", "--exception", "*"]}


def _export(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=True).stdout
    into.mkdir()  # (tar -C needs the folder there)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _outputs(code: Path, out: Path, releases: list[str]) -> float:
    """Write every output of `code` under `out`; returns the seconds it took."""
    env = {**os.environ, "PYTHONPATH": str(code), "SOURCE_DATE_EPOCH": "1767225600", "PYTHONHASHSEED": "0"}
    started = time.perf_counter()

    def run(*args: str) -> None:
        command = [sys.executable, "-m", "extractor", *args, "-q"]
        subprocess.run(command, cwd=out, env=env, check=True, stdout=subprocess.DEVNULL)

    for name, scope in SCOPES.items():
        for release in releases:
            run("--release", release, *scope, "--no-cache", "--output", str(out / "catalogs" / name))
        specs = [f"release:{release}" for release in releases]
        history = out / "history" / name
        run("history", *specs, *scope, "--format", "markdown", "--output", str(history))
        newest = next((out / "catalogs" / name).glob(f"release-{releases[-1]}*"))
        site = out / "site" / name
        run(
            "site", "--catalog", str(newest), *scope, "--history", str(history / "history.jsonl"), "--output", str(site)
        )
    return time.perf_counter() - started


def _differences(left: Path, right: Path) -> list[str]:
    found: list[str] = []

    def walk(compared: filecmp.dircmp[str], where: Path) -> None:
        found.extend(str(where / name) for name in compared.left_only + compared.right_only + compared.funny_files)
        _, mismatch, errors = filecmp.cmpfiles(compared.left, compared.right, compared.common_files, shallow=False)
        found.extend(str(where / name) for name in mismatch + errors)
        for name, sub in sorted(compared.subdirs.items()):
            walk(sub, where / name)

    walk(filecmp.dircmp(left, right), Path())
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the revision of this repository to compare with")
    parser.add_argument("--releases", nargs="+", default=["0.27.0", "0.28.0", "0.33.0"], metavar="X.Y.Z")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="same-output-") as scratch:
        base = _export(args.base, Path(scratch, "base-code").resolve())
        sides = {"base": base, "tree": ROOT}
        seconds = {}
        for side, code in sides.items():  # both write at the same path (a page may name it), then moved aside
            out = Path(scratch) / "out"
            out.mkdir()
            seconds[side] = _outputs(code, out, args.releases)
            out.rename(Path(scratch) / side)
        found = _differences(Path(scratch) / "base", Path(scratch) / "tree")
        files = sum(1 for path in (Path(scratch) / "tree").rglob("*") if path.is_file())
        timing = ", ".join(f"{side} {value:.1f} s" for side, value in seconds.items())
        if found:
            print(f"{len(found)} of {files} files differ ({timing}):", *found[:20], sep="\n  ")
            return 1
        print(f"same bytes: {files} files ({timing})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
