# Runtime: an interpreter where the codebase itself is installed (vllm==X.Y.Z in a virtual environment of the
# user cache, made once; or one the user names), and a session in it that runs attempts one by one (child.py).
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Any

from extractor.errors import ExtractorError
from extractor.repo.housekeeping import cache_dir

__all__ = ["IMPORT_TIMEOUT", "Session", "ensure_runtime", "probe", "runtime_dir", "session"]

IMPORT_TIMEOUT = 300.0  # seconds an interpreter may take to import the package before it is said to hang
_MISMATCHED = ("torchvision", "torchaudio", "torchcodec")  # wheels built against another torch than vllm's
_READY = "runtime.json"


def runtime_dir(package: str, version: str) -> Path:
    """Where the runtime of `package==version` is (or will be) made, in the user cache."""
    return cache_dir() / "runtimes" / f"{package}-{version}"


def ensure_runtime(
    package: str, version: str, *, progress: Callable[[str], None] | None = None, pip_args: tuple[str, ...] = ()
) -> Path:
    """The interpreter of a virtual environment holding `package==version`, made the first time (pip, as the
    user's pip is configured; the torch extensions whose wheels do not match vLLM's torch removed) and checked
    by importing it. A failure is one line naming what pip or the import said; nothing half made is kept."""
    folder = runtime_dir(package, version)
    python = folder / "bin" / "python"
    marker = folder / _READY
    if marker.is_file() and python.exists():
        return python
    building = folder.with_name(folder.name + ".partial")
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _: None)
    try:
        say(f"making a runtime for {package}=={version} in {folder} (once; it is large)")
        _run([sys.executable, "-m", "venv", str(building)], "cannot make a virtual environment")
        pip = [str(building / "bin" / "python"), "-m", "pip"]
        say(f"installing {package}=={version} with pip (this takes minutes)")
        _run([*pip, "install", "--disable-pip-version-check", f"{package}=={version}", *pip_args], "pip install")
        _run([*pip, "uninstall", "--yes", *_MISMATCHED], "pip uninstall")
        _matching_vision(building / "bin" / "python", pip, pip_args, say)
        found = probe(building / "bin" / "python", package)
        if found != version:
            raise ExtractorError(f"the runtime made for {package}=={version} imports {package} {found}")
        (building / _READY).write_text(json.dumps({"package": package, "version": version}) + "\n")
        shutil.rmtree(folder, ignore_errors=True)  # (one left without its marker by a run that was stopped)
        building.rename(folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return python


def _matching_vision(python: Path, pip: list[str], pip_args: tuple[str, ...], say: Callable[[str], None]) -> None:
    """torchvision built for the torch vLLM installed, when the index has one (newer vLLM imports it while its
    configs are built): kept only if it imports; without it, the checks that need it say so."""
    torch = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    if not torch:
        return
    say(f"installing the torchvision that matches torch {torch}")
    installed = subprocess.run(
        [*pip, "install", "--disable-pip-version-check", "torchvision", f"torch=={torch}", *pip_args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    works = (
        installed.returncode == 0
        and subprocess.run([str(python), "-c", "import torchvision"], capture_output=True, check=False).returncode == 0
    )
    if not works:
        subprocess.run([*pip, "uninstall", "--yes", "torchvision"], capture_output=True, check=False)


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        said = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        raise ExtractorError(f"{what} failed: {said[-1] if said else f'exit status {result.returncode}'}")


def probe(python: Path | str, package: str, *, timeout: float = IMPORT_TIMEOUT) -> str | None:
    """The version of `package` an interpreter imports (None when it has no `__version__`); a one-line error
    when it cannot run, cannot import it, or takes longer than `timeout`."""
    with session(python, package, timeout=timeout) as running:
        return running.version


@dataclass
class Session:
    """A child interpreter that imported the package once and runs attempts, each in a process of its own."""

    process: subprocess.Popen[str]
    version: str | None
    seconds: float  # what importing the package took

    def attempt(self, program: str, *, timeout: float = 60.0, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Run one program; what it raised (class, message, raise sites), or that it passed, timed out or crashed."""
        return self._ask({"id": ident, "program": program, "timeout": timeout, "memory": memory})

    def explore(self, spec: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Search for arguments that raise at a target (see explore.py); what it found, or how far it got."""
        return self._ask({"id": ident, "explore": spec, "timeout": timeout, "memory": memory})

    def serve(self, spec: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Lift a class's trigger and fixes to `vllm serve` lines and run them (see serving.py)."""
        return self._ask({"id": ident, "serve": spec, "timeout": timeout, "memory": memory})

    def line(self, line: dict[str, Any], *, timeout: float, memory: int = 0, ident: str = "") -> dict[str, Any]:
        """Run one `vllm serve` line (flags, model config, environment) in a fresh process."""
        return self._ask({"id": ident, "line": line, "timeout": timeout, "memory": memory})

    def _ask(self, task: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self.process.stdin, self.process.stdout
        timeout = float(task["timeout"])
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(task) + "\n")
        stdin.flush()
        line = _line(stdout, self.process, timeout + 30)
        if line is None:
            raise ExtractorError("the runtime stopped answering (its interpreter died or hangs)")
        return dict(json.loads(line))


@contextmanager
def session(
    python: Path | str,
    package: str,
    *,
    preload: tuple[str, ...] = (),
    warm: str = "",
    timeout: float = IMPORT_TIMEOUT,
    environment: dict[str, str] | None = None,
) -> Iterator[Session]:
    """Start child.py in `python`, wait until it imported `package` (and `preload`, the modules attempts use,
    and ran `warm`, a program that does once what attempts do first), and stop it (and what it started) after."""
    child = resources.files("extractor.reproduce").joinpath("child.py")
    # Offline: a model is the tiny folder the child writes, never a download (nor a wait for one).
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["EXTRACTOR_WARM"] = warm
    for name, value in (environment or {}).items():  # (what the user set wins)
        env.setdefault(name, value)
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            [str(python), str(child), package, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
    except OSError as error:
        raise ExtractorError(f"cannot run the runtime {python}: {error.strerror or error}") from None
    try:
        assert process.stdout is not None
        line = _line(process.stdout, process, timeout)
        if line is None:
            waited = time.monotonic() - started
            raise ExtractorError(f"the runtime {python} did not import {package} within {waited:.0f} s")
        ready = json.loads(line)
        if not ready.get("ready"):
            raise ExtractorError(f"the runtime {python} cannot import {package}: {ready.get('reason')}")
        yield Session(process, ready.get("version"), float(ready.get("seconds") or 0))
    finally:
        _stop(process)


def _line(stream: IO[str], process: subprocess.Popen[str], timeout: float) -> str | None:
    """The next line a child writes, or None when it ends first or writes none within `timeout` seconds."""
    import select

    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([stream], [], [], min(left, 1.0))
        if ready:
            line = stream.readline()
            return line if line else None
        if process.poll() is not None:
            return None


def _stop(process: subprocess.Popen[str]) -> None:
    """End the child and every process of its session (an attempt it forked, whatever that started)."""
    import signal

    for pipe in (process.stdin, process.stdout):
        try:
            if pipe is not None:
                pipe.close()
        except OSError:
            pass
    with suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
