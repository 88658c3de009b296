"""The process-wide tricks belong to the command line alone; an interrupt is a result wherever it lands."""

from __future__ import annotations

import gc
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from extractor.pipeline.cache import wait_for_writes
from extractor.pipeline.extract import ExtractOptions, extract
from extractor.util.lifecycle import STOP_SIGNALS
from tests.conftest import GitRepo

# Eight files of 40 KB each: enough source for worker processes to be started (scheduler._PARALLEL_BYTES).
BIG = {f"pkg/m{i}.py": f"raise ValueError('m{i}')\n" + "# padding\n" * 4000 for i in range(8)}


def _interpreter() -> tuple[object, ...]:
    return (
        gc.isenabled(),
        gc.get_freeze_count(),
        sys.getswitchinterval(),
        sys.unraisablehook,
        tuple(signal.getsignal(number) for number in (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE)),
    )


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_a_library_extraction_never_changes_the_interpreter(
    git_repo: GitRepo, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, cache: bool
) -> None:
    """Not after extract() returns, and not while it runs either (seen from the scan in this process):
    the collector, the switch interval, the hook for ignored exceptions and the signal handlers are the
    caller's."""
    import importlib

    scan_module = importlib.import_module("extractor.scanning.scan")  # (extractor.scanning.scan is the function)

    git_repo.commit(BIG, tag="v1")
    before = _interpreter()
    seen: list[tuple[object, ...]] = []
    real = scan_module.scan_many
    main = os.getpid()

    def spy(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() == main:  # the batches this process scans beside the workers
            seen.append(_interpreter())
        return real(*args, **kwargs)

    monkeypatch.setattr(scan_module, "scan_many", spy)
    options = ExtractOptions(paths=("pkg",), jobs=2, cache=cache)
    first = extract(repo=str(git_repo.path), revision="v1", options=options)
    again = extract(repo=str(git_repo.path), revision="v1", options=options)  # a stored catalog, with the cache
    wait_for_writes()
    assert first.manifest.counts.records == again.manifest.counts.records == 8
    assert seen and set(seen) == {before}
    assert _interpreter() == before
    assert gc.get_freeze_count() == 0


_TRICKS = """
import gc, sys
import importlib
scan_module = importlib.import_module("extractor.scanning.scan")  # (extractor.scanning.scan is the function)
real = scan_module.scan_many
def spy(*args, **kwargs):
    print("collector", gc.isenabled(), file=sys.__stderr__)
    return real(*args, **kwargs)
scan_module.scan_many = spy
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
"""


def test_a_command_line_run_scans_without_the_collector(git_repo: GitRepo, tmp_path: Path) -> None:
    """The command line keeps its saving: the collector paused while it scans (in one process, serial)."""
    git_repo.commit({"pkg/a.py": "raise ValueError('a')\n"}, tag="v1")
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--no-cache", "--jobs", "1", "--output", "-"]
    result = subprocess.run([sys.executable, "-c", _TRICKS, *args], capture_output=True, text=True, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "collector False\n")
    assert result.stdout.count("\n") == 1


_KEEPING = """
import sys, weakref
from extractor.util import lifecycle
class Leftovers: pass
with lifecycle.command_line_process():
    first, second = Leftovers(), Leftovers()
    was_first, was_second = weakref.ref(first), weakref.ref(second)
    lifecycle.keep_until_exit(first)
    del first
    kept = was_first() is not None
    lifecycle.keep_until_exit(second)  # the next extraction's leftovers (a history's next revision)
    del second
    print(kept, was_first() is None, was_second() is not None, file=sys.stderr)
"""


def test_a_command_line_keeps_only_the_last_extractions_leftovers() -> None:
    """Kept rather than freed at exit, but a process that extracts revision after revision (a history of
    95 releases) must not keep every revision's: its memory would grow with the number of revisions."""
    result = subprocess.run([sys.executable, "-c", _KEEPING], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (0, "True True True\n")


# Each probe makes a stop signal land at one point of a run: it is run by `python -c` before the command line.
_PROBES = {
    # A worker process's scan: Ctrl-C reaches the whole process group (workers leave it to the main process).
    "worker": """
import importlib
scan_module = importlib.import_module("extractor.scanning.scan")  # (extractor.scanning.scan is the function)
real = scan_module.scan_many
def probe(*args, **kwargs):
    if os.getpid() != MAIN:
        os.killpg(0, signal.SIGINT)
        time.sleep(1)
    return real(*args, **kwargs)
scan_module.scan_many = probe
""",
    # The background thread that stores the whole catalog in the cache, halfway through writing it, while
    # the main process waits to write the catalog.
    "cache writer": """
import threading
import extractor.util.atomic, extractor.pipeline.cache, extractor.pipeline.write
landed = threading.Event()
def probe(path, data, *, durable=True):
    data = b"".join(data)
    with extractor.util.atomic.replacing(path, durable=durable) as stream:
        stream.write(data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGINT)
        landed.set()
        time.sleep(0.5)
        stream.write(data[len(data) // 2 :])
extractor.pipeline.cache.replace_bytes = probe
real = extractor.pipeline.write.write_catalog
def later(*args):
    landed.wait(30)
    return real(*args)
extractor.pipeline.write.write_catalog = later
""",
    # The catalog writer, while records.jsonl is written (synced).
    "catalog writer": """
real = os.fsync
def probe(fd):
    os.kill(os.getpid(), signal.SIGINT)
    return real(fd)
os.fsync = probe
""",
    # A finalizer, where an exception cannot propagate: Python reports it as ignored (a stop signal landing
    # while pydantic's compiled core calls back into Python did so once).
    "finalizer": """
import extractor.pipeline.write
class Finalized:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)  # its handler runs here, inside the finalizer
real = extractor.pipeline.write.records_digest
def probe(records):
    Finalized()
    return real(records)
extractor.pipeline.write.records_digest = probe
""",
    # (An extraction writes its catalog without pydantic: a stop signal inside pydantic's serializer, which
    # wraps the KeyboardInterrupt, is sent to a history as it writes: tests/test_robustness.py.)
}


@pytest.mark.parametrize("point", list(_PROBES))
def test_an_interrupt_anywhere_exits_130_and_leaves_no_file_behind(
    git_repo: GitRepo, tmp_path: Path, point: str
) -> None:
    """Exit 130, one line on stderr (no traceback), no catalog, no temporary file in the output folder
    nor in the cache, whichever point the stop signal lands at."""
    git_repo.commit(BIG, tag="v1")
    cache = tmp_path / "cache"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    script = "import os, signal, sys, time\nMAIN = os.getpid()\n" + _PROBES[point]
    script += 'sys.argv = ["extractor", *sys.argv[1:]]\nfrom extractor.cli.main import run_and_exit\nrun_and_exit()\n'
    jobs = "2"
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--jobs", jobs, "--output", "out"]
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "EXTRACTOR_DEBUG": ""},
        start_new_session=True,  # the probe's Ctrl-C reaches this run's process group only
        timeout=120,
    )
    assert (result.returncode, result.stderr) == (130, "extractor: interrupted\n")
    assert [path for path in cwd.rglob("*") if path.is_file()] == []
    assert [path.name for path in cache.rglob("*") if path.is_file() and path.name.endswith(".tmp")] == []
    if point == "cache writer":  # the whole catalog it was storing is not published after the interrupt
        assert list((cache / "extractor" / "catalogs").iterdir()) == []


def test_an_interrupt_between_records_and_manifest_waits_for_both(git_repo: GitRepo, tmp_path: Path) -> None:
    """A stop signal that comes while the catalog's files are renamed into place takes effect after the
    last one: exit 130 with a whole catalog (the manifest's checksum is that of the records), never
    records without their manifest."""
    git_repo.commit({"pkg/a.py": "raise ValueError('a')\n"}, tag="v1")
    script = """
import os, signal, sys
import extractor.util.atomic
real = os.replace
def probe(source, target):
    if str(target).endswith("records.jsonl"):
        os.kill(os.getpid(), signal.SIGINT)
    return real(source, target)
extractor.util.atomic.os.replace = probe
sys.argv = ["extractor", *sys.argv[1:]]
from extractor.cli.main import run_and_exit
run_and_exit()
"""
    args = ["--repo", str(git_repo.path), "--sha", "v1", "--path", "pkg", "--no-cache", "--output", "out"]
    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (130, "extractor: interrupted\n")
    (records,) = (tmp_path / "out").glob("*/records.jsonl")
    manifest = orjson.loads((records.parent / "manifest.json").read_bytes())
    assert manifest["recordsSha256"] == hashlib.sha256(records.read_bytes()).hexdigest()
    assert sorted(path.name for path in records.parent.iterdir()) == ["manifest.json", "records.jsonl"]


def test_a_stop_signal_inside_an_import_is_raised_once_the_import_is_done(tmp_path: Path) -> None:
    """A module's compiled part may not survive an exception raised inside its import (a Ctrl-C during
    orjson's crashed the interpreter, exit 139): a signal that lands while a module is imported is raised
    once the import is done, as an interrupt, and the run still ends as interrupted."""
    (tmp_path / "slow_module.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nfinished = True\n"
    )
    script = """
import sys, time
from extractor.util.lifecycle import Interrupted, interruption, signals_as_interrupts
sys.path.insert(0, sys.argv[1])
try:
    with signals_as_interrupts():
        import slow_module
        print("imported whole:", slow_module.finished, flush=True)
        time.sleep(5)  # the interrupt comes here, after the import
        print("never interrupted", flush=True)
except Interrupted as interrupt:
    print("interrupted after it:", interrupt.signum, interruption(interrupt), flush=True)
"""
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == ["imported whole: True", f"interrupted after it: {signal.SIGINT} 130"]


def test_an_import_that_blocks_is_interrupted_after_a_second_all_the_same(tmp_path: Path) -> None:
    """An interrupt waits for an import to end, but not for one that blocks (module code waiting on a
    lock or on I/O): after about a second it is raised inside it."""
    (tmp_path / "blocking_module.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\nfinished = True\n"
    )
    script = """
import sys, time
from extractor.util.lifecycle import Interrupted, signals_as_interrupts
sys.path.insert(0, sys.argv[1])
started = time.monotonic()
try:
    with signals_as_interrupts():
        import blocking_module
except Interrupted:
    print("interrupted inside the import after", round(time.monotonic() - started), "s", flush=True)
"""
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == ["interrupted inside the import after 1 s"], result.stderr
