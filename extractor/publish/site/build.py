# Build: a site's pages written into a new folder (record pages shared among forked workers) and swapped in whole.
from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from extractor.catalog.load import LoadedCatalog, present
from extractor.errors import ExtractorError
from extractor.model.records import CatalogLine
from extractor.pipeline.write import check_folder, elsewhere, why_not
from extractor.publish.site.highlight import window_numbers
from extractor.publish.site.inputs import HistoryEvent, PublishedDiff
from extractor.publish.site.pages import BUILT, MARKER, Pages, other_pages, pages_of, record_pages
from extractor.query.analysis import AnalysisEntry
from extractor.repo.housekeeping import remove_orphans
from extractor.util.atomic import fault_point, read_whole
from extractor.util.lifecycle import collector_paused, handed, handing

_T = TypeVar("_T")


@dataclass(frozen=True)
class SiteSummary:
    """What a build wrote: the number of pages of each kind and the bytes in all."""

    records: int
    diffs: int
    files: int
    bytes: int


def _write_files(staging: Path, files: Iterable[tuple[str, bytes]]) -> tuple[int, int]:
    """Write files into the staging directory; return how many and their bytes."""
    count = size = 0
    made: set[Path] = set()
    for name, data in files:
        directory = (staging / name).parent
        if directory not in made:
            directory.mkdir(parents=True, exist_ok=True)
            made.add(directory)
        with open(staging / name, "wb") as stream:
            stream.write(data)
        count, size = count + 1, size + len(data)
    return count, size


def _made_for(old: Path, output: Path, staging: Path) -> bool:
    """Whether the folder a site's symlink pointed at is one this code made for that link (a staging folder
    beside it: `.NAME.xxxxxxxx`), and so is removed once the link points at the new one. Any other folder
    is the user's, left as it is: one they pointed the link at, or one that holds the link (`self -> .`)."""
    here = staging.resolve()
    return old != here and old.parent == here.parent and old.name.startswith(f".{output.name}.")


def _swap_in(output: Path, fill: Callable[[Path], _T], *, link: bool, option: str = "--output") -> _T:
    """Have `fill` write a site into a new directory beside `output`, then swap it in; return what it returned.

    `output` may be missing, empty, a site built here (it holds MARKER), or a symlink to one (see
    `check_output`). A symlink (and with `link`, a missing `output`) is switched atomically to the new
    directory; a directory is replaced by two renames, between which it is missing for an instant but never
    half written.
    """
    parent = output.absolute().parent
    _restore_moved_aside(output, parent)
    check_output(output, option=option)
    # A build killed midway left its folder: named after its process, it goes once that process is gone
    # (never the one the site's link names).
    remove_orphans(parent, f".{output.name}.", keep=output.resolve() if output.is_symlink() else None)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.{os.getpid()}-", dir=parent))
    except OSError as error:
        raise ExtractorError(f"cannot write {output}: {why_not(output / MARKER, error)}") from None
    try:
        try:
            result = fill(staging)
            staging.chmod(0o755)  # mkdtemp makes it private; a site is for reading
            _carry_over(output.resolve() if output.is_symlink() else output, staging)
        except OSError as error:
            raise ExtractorError(f"cannot write the site beside {output}: {error.strerror or error}") from None
        if output.is_symlink() or (link and not output.exists()):
            old = output.resolve() if output.is_symlink() else None
            pointer = parent / f".{output.name}.link"
            with contextlib.suppress(FileNotFoundError):
                pointer.unlink()
            pointer.symlink_to(staging.name)
            os.replace(pointer, output)
            if old is not None and _made_for(old, output, staging):
                shutil.rmtree(old, ignore_errors=True)
            return result
        if output.exists() and _exchanged(staging, output):  # (one atomic step: never no site there)
            shutil.rmtree(staging, ignore_errors=True)  # (the old site, now at the staging folder's name)
            return result
        if output.exists():  # (a system without the exchange: two renames)
            trash = Path(tempfile.mkdtemp(prefix=f".{output.name}.{os.getpid()}-", suffix=".old", dir=parent))
            try:
                os.replace(output, trash / "site")
                fault_point("site moved aside")
                try:
                    os.replace(staging, output)
                except BaseException:
                    os.replace(trash / "site", output)  # the old site back where it was
                    raise
            except BaseException:
                with contextlib.suppress(OSError):
                    trash.rmdir()  # (only if empty: never the old site, should it not have gone back)
                raise
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(staging, output)
        return result
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _exchanged(new: Path, old: Path) -> bool:
    """Swap two folders in one step (Linux's renameat2 with RENAME_EXCHANGE): True when done, False where the
    system or its file system cannot (then the caller renames twice)."""
    if os.environ.get("EXTRACTOR_NO_EXCHANGE"):  # (as a system without it: what tests of the fallback ask)
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
    fault_point("site built")
    if renameat2(at_cwd, os.fsencode(new), at_cwd, os.fsencode(old), exchange) == 0:
        return True
    number = ctypes.get_errno()
    if number in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(number, os.strerror(number), str(old))


def _restore_moved_aside(output: Path, parent: Path) -> None:
    """A build killed between its two renames (where the exchange cannot be made) left the old site moved
    aside and none at `output`: put it back, with what a person added to it (a CNAME), before anything."""
    if output.exists() or output.is_symlink():
        return
    for trash in sorted(parent.glob(f".{glob.escape(output.name)}.*.old")):
        if (trash / "site" / MARKER).is_file():
            os.replace(trash / "site", output)
            shutil.rmtree(trash, ignore_errors=True)
            return


def check_output(output: Path, *, option: str = "--output") -> None:
    """Refuse, before any work, an `output` a site cannot be swapped into: a file or a symlink that leads
    nowhere at its path or above it (see `check_folder`); a folder with something in it, or a symlink to a
    folder, that is not a site built here; a folder the new site cannot be written beside (the nearest one
    there is, where what is missing of the way would be made), or a site there that cannot be moved away.
    What is said names `option`, the option that moves the site elsewhere."""
    check_folder(output, option=option)
    if output.is_symlink():
        target = output.resolve()
        if not (target / MARKER).exists():
            raise ExtractorError(
                f"{output} points at {target}, which is not a site built by extractor (name another folder with "
                f"{option})"
            )
    elif output.exists() and (not output.is_dir() or (any(output.iterdir()) and not (output / MARKER).exists())):
        raise ExtractorError(
            f"{output} exists and is not a site built by extractor: not replacing it (name another folder with "
            f"{option})"
        )
    beside = next(folder for folder in output.absolute().parents if folder.exists())
    # A folder moved into another one gets its `..` entry rewritten: the old site is written too.
    moved = output.is_dir() and not output.is_symlink()
    for folder in (beside, output) if moved else (beside,):
        if not os.access(folder, os.W_OK | os.X_OK):
            readonly = os.statvfs(folder).f_flag & os.ST_RDONLY
            why = os.strerror(errno.EROFS if readonly else errno.EACCES)
            raise ExtractorError(f"cannot write {output}: {folder}: {why}{elsewhere(option)}")


def _carry_over(old: Path, staging: Path) -> None:
    """Carry into the new site what a person put in the old one (a CNAME, a `.git` of a pages branch, notes):
    whatever the old build did not make (BUILT lists what it made; a site with no such list, of an older
    extractor, carries nothing over) and the new one does not make either.
    Then list what the new site holds, as the next build will read it."""
    made = {str(path.relative_to(staging)) for path in staging.rglob("*") if not path.is_dir()}
    listed = old / BUILT
    if old.is_dir() and (old / MARKER).exists() and present(listed):
        built = set(read_whole(listed).decode(errors="replace").splitlines())
        folders = {str(parent) for name in built for parent in Path(name).parents}
        for path in sorted(old.rglob("*"), key=lambda p: len(p.parts)):
            name = str(path.relative_to(old))
            if name in (MARKER, BUILT) or not (path.is_symlink() or path.exists()):
                continue  # the old markers, or inside what was carried already
            whole = path.is_dir() and not path.is_symlink()
            mine = name not in (folders if whole else built)
            if mine and name not in made and not (staging / name).exists():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                _linked(path, staging / name)
    (staging / BUILT).write_text("".join(f"{name}\n" for name in sorted(made)))


def _linked(source: Path, target: Path) -> None:
    """Give `target` what `source` holds, hard-linked (no bytes copied), the source left in place: until the
    new site is swapped in, the old one is whole (an interrupted build loses nothing of the person's)."""
    if source.is_symlink():
        target.symlink_to(os.readlink(source))
    elif source.is_dir():
        shutil.copytree(source, target, symlinks=True, copy_function=_link_or_copy)
    else:
        _link_or_copy(source, target)


def _link_or_copy(source: str | Path, target: str | Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system (a site behind a symlink), or links not allowed: copied
        shutil.copy2(source, target)


def write_site(files: Mapping[str, bytes], output: Path, *, link: bool = False) -> None:
    """Write a site into `output` whole: build it aside, then swap it in, so no reader sees half a site.

    See `_swap_in` for what `output` may be and for `link`.
    """
    _swap_in(output, lambda staging: _write_files(staging, files.items()), link=link)


# Record pages are rendered by a few processes, forked once the records are read: each takes whole files
# (so a file's source is highlighted once) and writes its pages itself. A record page costs about 1 ms.
_WORKERS = 2


_PARALLEL_FROM = 400  # records; fewer are done in this process, sooner than a process starts


_PAGE_WORK = 40  # rendering a page costs about what highlighting 40 lines of source does


def _shares(lines: Sequence[CatalogLine], count: int) -> list[list[CatalogLine]]:
    """Split records into `count` shares of about equal work, keeping each file's records together, in order."""
    by_file: dict[str, list[CatalogLine]] = {}
    for line in lines:
        by_file.setdefault(line.record.filePath, []).append(line)
    # A page's work: rendering it, and highlighting its window (lines a file's windows share count once).
    work = {
        path: sum(_PAGE_WORK + len(window_numbers(line.record)) for line in group) for path, group in by_file.items()
    }
    shares: list[list[CatalogLine]] = [[] for _ in range(count)]
    loads = [0] * count
    for path in sorted(by_file, key=lambda p: (-work[p], p)):
        lightest = loads.index(min(loads))
        shares[lightest].extend(by_file[path])
        loads[lightest] += work[path]
    return shares


def _write_share(staging: Path, index: int) -> tuple[int, int]:
    """In a forked worker (or the process that forked it): render and write the record pages of one share,
    of those the process that forked the workers handed them (lifecycle.handing)."""
    pages, shares = cast(tuple[Pages, list[list[CatalogLine]]], handed())
    return _write_files(staging, record_pages(pages, shares[index]))


def _start_worker(parent: int) -> None:
    import signal

    from extractor.util.lifecycle import STOP_SIGNALS, die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles ^C, and ends the pool
    for number in STOP_SIGNALS[1:]:
        signal.signal(number, signal.SIG_DFL)
    die_with_parent(parent)


def _workers(records: int) -> int:
    """How many processes render record pages: one below _PARALLEL_FROM records, or while this process
    runs other threads (a fork would copy whatever locks they hold)."""
    if records < _PARALLEL_FROM or threading.active_count() > 1:
        return 1
    return max(1, min(_WORKERS, len(os.sched_getaffinity(0))))


def _fill(pages: Pages, staging: Path, workers: int) -> tuple[int, int]:
    """Write every page of a site into `staging`, the record pages shared among `workers` processes."""
    if workers <= 1:
        counts = [_write_files(staging, record_pages(pages, pages.lines))]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with handing((pages, _shares(pages.lines, workers))):
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(
                workers - 1, mp_context=context, initializer=_start_worker, initargs=(os.getpid(),)
            ) as pool:
                futures = [pool.submit(_write_share, staging, index) for index in range(1, workers)]
                counts = [_write_share(staging, 0)] + [future.result() for future in futures]
    counts.append(_write_files(staging, other_pages(pages).items()))
    return sum(count for count, _ in counts), sum(size for _, size in counts)


def build_site(
    catalog: LoadedCatalog,
    *,
    output: Path,
    analysis: Mapping[str, AnalysisEntry] | None = None,
    diffs: Sequence[PublishedDiff] = (),
    history: Mapping[str, Sequence[HistoryEvent]] | None = None,
    link: bool = False,
    workers: int | None = None,
    option: str = "--output",
) -> SiteSummary:
    """Render a catalog's site straight into a new directory and swap it into `output` (see `_swap_in` for
    `link`; `option` names the option that gave it). `workers`: processes that render record pages (default:
    up to 2, on large catalogs)."""
    pages = pages_of(catalog, analysis, diffs, history)
    workers = _workers(len(pages.lines)) if workers is None else workers
    with collector_paused():  # rendering makes strings by the million, few cycles: the collector only slows it
        files, size = _swap_in(output, lambda staging: _fill(pages, staging, workers), link=link, option=option)
    return SiteSummary(records=len(pages.lines), diffs=len(diffs), files=files, bytes=size)
