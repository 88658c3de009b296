"""Build the libraries' part of `match`'s background: the raise sites of the libraries vLLM runs with, scanned
by this project's own extractor from their released sources, as installed in a vLLM runtime.

Usage: python scripts/build_background.py [--python RUNTIME_PYTHON] [--release X.Y.Z ...] [--library NAME ...]
       [--output extractor/query/match/data/background.jsonl.gz]

The data shipped was built with `--python ~/.cache/extractor/runtimes/vllm-0.28.0/bin/python --release
0.6.3.post1 --release 0.9.0 --release 0.28.0 --release 0.34.0`.

RUNTIME_PYTHON is the interpreter of an environment holding a vLLM release and what it pins (`reproduce`
installs one under the user cache: runtimes/vllm-X.Y.Z/bin/python): each library's version is what that
environment holds. `--release X.Y.Z` adds the versions vLLM X.Y.Z's sdist pins at least (the lower bound of
each library in its requirements), their wheels downloaded from the package index pip is configured with
(torch's aside: its wheels are too large to fetch for this, so it comes from the runtime only). For each
library and version, its package's Python files are committed to a scratch git repository and extracted as a
whole package, every class (`--path NAME --exception '*'`); its templates with enough literal text to be a
confident answer at all (CATCH_ALL) are written, one JSON line each, sorted, a template two versions share
once (its versions joined): [library, version, filePath, lineNumber, errorClass, errorMessage, messagePattern,
[[group, expression], ...], [the pattern's literal runs, as pattern.read_pattern reads them]]. The output is
the same bytes for the same inputs (gzip's header holds no time).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from extractor.pipeline.extract import ExtractOptions, extract  # noqa: E402
from extractor.query.match.pattern import read_pattern, templates_of  # noqa: E402
from extractor.repo.release import fetch_sdist  # noqa: E402

LIBRARIES = ["transformers", "torch", "pydantic", "huggingface_hub", "tokenizers"]
DOWNLOADED = [name for name in LIBRARIES if name != "torch"]
# A requirement line of an sdist's requirements files: `transformers >= 4.45.2  # why`.
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*>=\s*([0-9][^,;\s#]*)", re.M)
OUTPUT = ROOT / "extractor" / "query" / "match" / "data" / "background.jsonl.gz"
# What the runtime's interpreter says of a distribution: its version and the folder of its import package.
_WHERE = """
import importlib.metadata, importlib.util, json, sys
name = sys.argv[1]
spec = importlib.util.find_spec(name)
folder = list(spec.submodule_search_locations)[0]
print(json.dumps([importlib.metadata.version(name), folder]))
"""


def located(python: str, library: str) -> tuple[str, Path]:
    """The library's version and package folder in the runtime, without importing it."""
    said = subprocess.run([python, "-c", _WHERE, library], capture_output=True, text=True, check=True).stdout
    version, folder = json.loads(said)
    return version, Path(folder)


def pins(release: str) -> dict[str, str]:
    """The lower bound of each library the release's sdist requires on every platform (its common
    requirements)."""
    found: dict[str, str] = {}
    with tarfile.open(fetch_sdist(release).path) as sdist:
        for member in sdist.getmembers():
            name = member.name.rpartition("/")[2]
            if not (member.isfile() and "requirements" in member.name and "common" in name and name.endswith(".txt")):
                continue  # (requirements-common.txt, requirements/common.txt: what every platform installs)
            text = sdist.extractfile(member).read().decode()  # type: ignore[union-attr]
            for project, version in _PIN.findall(text):
                library = project.lower().replace("-", "_")
                if library in DOWNLOADED:
                    found.setdefault(library, version)
    return found


def downloaded(library: str, version: str, scratch: Path) -> Path:
    """The package folder of the library's wheel of that version, downloaded and unpacked."""
    target = scratch / f"wheel-{library}-{version}"
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    subprocess.run([*command, "--dest", str(target), f"{library}=={version}"], check=True)
    (wheel,) = target.glob("*.whl")
    with zipfile.ZipFile(wheel) as unpacked:
        unpacked.extractall(target / "unpacked")
    return target / "unpacked" / library


def committed(folder: Path, library: str, scratch: Path) -> Path:
    """A git repository holding the package's Python files under `library/`, committed."""
    repo = scratch / f"repo-{library}-{len(list(scratch.iterdir()))}"
    for source in sorted(folder.rglob("*.py")):
        target = repo / library / source.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    git = ["git", "-C", str(repo), "-c", "user.name=background", "-c", "user.email=background@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    dates = {"GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}
    subprocess.run([*git, "commit", "-q", "-m", library], check=True, env={**os.environ, **dates})
    return repo


def rows(library: str, version: str, folder: Path, scratch: Path) -> list[list[object]]:
    repo = committed(folder, library, scratch)
    options = ExtractOptions(paths=(library,), exceptions=("*",))
    lines = extract(repo=str(repo), revision="HEAD", options=options).lines
    out: list[list[object]] = []
    for template in templates_of(lines):
        if template.catch_all or not template.sites:
            continue
        site = min(template.places(), key=lambda s: (s.filePath, s.lineNumber))
        groups = [list(group) for group in template.groups]
        fields = [template.errorClass, template.errorMessage, template.messagePattern, groups]
        out.append([library, version, site.filePath, site.lineNumber, *fields])
    print(f"build_background: {library} {version}: {len(lines)} raise sites, {len(out)} templates", file=sys.stderr)
    return out


def merged(found: list[list[object]]) -> list[list[object]]:
    """One row per library and template (class and pattern), its versions joined in version order, at its
    place in the oldest; sorted."""
    by_key: dict[tuple[str, str, str], list[object]] = {}
    for row in sorted(found, key=lambda row: (str(row[0]), Version(str(row[1]).partition("+")[0]))):
        key = (str(row[0]), str(row[4]), str(row[6]))
        held = by_key.get(key)
        if held is None:
            by_key[key] = list(row)
        elif str(row[1]) not in str(held[1]).split(", "):
            held[1] = f"{held[1]}, {row[1]}"
    return sorted(by_key.values(), key=lambda row: (str(row[0]), str(row[2]), int(str(row[3])), str(row[5])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", help="the interpreter of a vLLM runtime")
    parser.add_argument("--release", action="append", default=[], help="a vLLM release whose pins to add")
    parser.add_argument("--library", action="append", help=f"a library to scan (default: {', '.join(LIBRARIES)})")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    wanted = args.library or LIBRARIES
    found: list[list[object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        done: set[tuple[str, str]] = set()
        if args.python:
            for library in wanted:
                version, folder = located(args.python, library)
                done.add((library, version))
                found += rows(library, version, folder, Path(scratch))
        for release in args.release:
            for library, version in sorted(pins(release).items()):
                if library in wanted and (library, version) not in done:
                    done.add((library, version))
                    found += rows(library, version, downloaded(library, version, Path(scratch)), Path(scratch))
    found = merged(found)
    write(found, args.output)
    print(f"build_background: {len(found)} templates -> {args.output}", file=sys.stderr)


def write(found: list[list[object]], output: Path) -> None:
    """The rows, each with its pattern's literal runs (what `match` compares with a catalog's, read here once
    rather than at each start), one JSON line each, gzipped with no time or name in the header."""
    text = "".join(
        json.dumps([*row, [run for run in read_pattern(str(row[6]))[0] if run]], ensure_ascii=False) + "\n"
        for row in found
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed:
        packed.write(text.encode())


if __name__ == "__main__":
    main()
