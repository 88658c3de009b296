"""Reviewed snapshots: a whole page compared with its file under tests/snapshots/, as ruff's and insta's tests do.

A test hands `assert_snapshot` the text a user sees (a CLI page, a record, a generated program) and the name of
its file. A difference fails the test with a unified diff that names the file; run the tests with
EXTRACTOR_UPDATE_SNAPSHOTS=1 to write the files anew, then review them as any other change (`git diff
tests/snapshots`). A missing file is never written without it: a snapshot nobody looked at pins nothing."""

from __future__ import annotations

import difflib
import os
import tempfile
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = "EXTRACTOR_UPDATE_SNAPSHOTS"


def assert_snapshot(name: str, text: str, *, folder: Path = SNAPSHOTS) -> None:
    """Fail, showing a unified diff, unless `text` is the content of the snapshot file `name` (under `folder`),
    byte for byte; with EXTRACTOR_UPDATE_SNAPSHOTS=1, write `text` there instead."""
    path = folder / name
    shown = path.relative_to(folder.parent)
    for place in (tempfile.gettempdir(), str(Path.home())):
        if f"{place}/" in text:
            pytest.fail(
                f"the page for {shown} holds a path of this machine ({place}/...): name it relatively", pytrace=False
            )
    if os.environ.get(UPDATE) == "1":
        if not path.exists() or path.read_bytes() != text.encode():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode())
        return
    if not path.exists():
        pytest.fail(f"no snapshot {shown}: run the test with {UPDATE}=1 to write it, then review it", pytrace=False)
    expected = path.read_bytes().decode()
    if text == expected:
        return
    diff = difflib.unified_diff(
        expected.splitlines(keepends=True), text.splitlines(keepends=True), str(shown), f"{shown} (now)"
    )
    pytest.fail(
        f"{shown} is not what the test made now:\n{''.join(_ended(line) for line in diff)}"
        f"(if the change is meant: run the test with {UPDATE}=1, and review the diff of {shown})",
        pytrace=False,
    )


def _ended(line: str) -> str:
    """A diff's line ended, saying so where the text had no last newline (as diff(1) does)."""
    return line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
