# Site: a catalog as static pages (an index with search, a page per record and per published diff), swapped in whole.
from __future__ import annotations

import contextlib
import difflib
import errno
import os
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from extractor.catalog.load import LoadedCatalog, present
from extractor.errors import ExtractorError
from extractor.model.records import CatalogLine, Record
from extractor.pipeline.write import check_folder, why_not
from extractor.publish.site_inputs import HistoryEvent, PublishedDiff
from extractor.query.analysis import ANALYSIS_FIELDS, AnalysisEntry, overlay
from extractor.query.explain import condition_in_words
from extractor.query.listing import first_words
from extractor.repo.housekeeping import remove_orphans
from extractor.util.atomic import read_whole
from extractor.util.lifecycle import collector_paused, handed, handing
from extractor.util.markdown import is_web_address

__all__ = ["MARKER", "SiteSummary", "build_site", "check_output", "render_site", "write_site"]

MARKER = ".extractor-site"  # names a directory this module built, so that replacing it deletes nothing else
BUILT = ".extractor-site-files"  # what the build made: the rest of a site's folder is a person's, kept
_ASSETS = "site_assets"
_FIRST_WORDS = 80
_STYLE = "default"
_T = TypeVar("_T")


@dataclass(frozen=True)
class SiteSummary:
    """What a build wrote: the number of pages of each kind and the bytes in all."""

    records: int
    diffs: int
    files: int
    bytes: int


@dataclass(frozen=True)
class _Row:
    """A record as the index lists it."""

    line: CatalogLine
    first_words: str


@dataclass
class _Highlighter:
    """Highlights source windows, lexing each run of lines a file's windows cover once, in context."""

    lines: dict[tuple[str, int], str] = field(default_factory=dict)

    def add(self, catalog: Iterable[CatalogLine]) -> None:
        by_file: dict[str, dict[int, str]] = {}
        for line in catalog:
            record = line.record
            texts = by_file.setdefault(record.filePath, {})
            for number, text in zip(_numbers(record), record.sourceCode.split("\n"), strict=True):
                texts.setdefault(number, text)
        for path, texts in by_file.items():
            numbers = sorted(texts)
            start = 0
            for i in range(1, len(numbers) + 1):
                if i == len(numbers) or numbers[i] != numbers[i - 1] + 1:
                    run = numbers[start:i]
                    html = _highlight(path, "\n".join(texts[n] for n in run))
                    for number, markup in zip(run, html, strict=True):
                        self.lines[(path, number)] = markup
                    start = i

    def window(self, record: Record, marked: range) -> Markup:
        """The record's source window as HTML, a span per line carrying its number, the marked lines flagged.

        Its lines are those its `sourceCode` holds, numbered from `sourceCodeStart` (as `add` took them):
        a record whose `sourceCodeEnd` says otherwise (the model does not tie them) is shown as it is."""
        out = []
        for n in _numbers(record):
            css = "line raise" if n in marked else "line"
            out.append(f'<span id="L{n}" class="{css}" data-n="{n}">{self.lines[(record.filePath, n)]}</span>')
        return Markup("".join(out))


def _numbers(record: Record) -> range:
    """The numbers of the lines of a record's source window: one per line its `sourceCode` holds."""
    return range(record.sourceCodeStart, record.sourceCodeStart + record.sourceCode.count("\n") + 1)


@cache
def _lexer(suffix: str) -> Any:
    from pygments.lexers import TextLexer, get_lexer_for_filename
    from pygments.util import ClassNotFound

    if suffix in (".py", ".pyi"):
        from extractor.publish.site_lexer import FastPythonLexer

        return FastPythonLexer()
    try:
        return get_lexer_for_filename(f"x{suffix}", stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


@cache
def _style() -> Any:
    from pygments.styles import get_style_by_name

    return get_style_by_name(_STYLE)


@cache
def _css_class(token_type: Any) -> str:
    """Pygments' short CSS class of a token type, or "" where the style gives it no look of its own."""
    from pygments.token import STANDARD_TYPES

    if not any(_style().style_for_token(token_type).values()):
        return ""
    while token_type not in STANDARD_TYPES:
        token_type = token_type.parent
    return str(STANDARD_TYPES[token_type])


def _highlight(path: str, text: str) -> list[str]:
    """Highlight `text` as the file `path` holds it, and return one line of HTML per line of text."""
    lines: list[str] = []
    parts: list[str] = []
    for _, token_type, value in _lexer(Path(path).suffix).get_tokens_unprocessed(text):
        if value == "\n":
            lines.append("".join(parts))
            parts = []
            continue
        fragments = _FRAGMENTS.get(token_type)
        if fragments is None:
            fragments = _FRAGMENTS[token_type] = {}
        html = fragments.get(value)
        if html is None:
            if "\n" in value:
                first, *rest = value.split("\n")
                parts.append(_fragment(token_type, first))
                for part in rest:
                    lines.append("".join(parts))
                    parts = [_fragment(token_type, part)]
                continue
            html = _fragment(token_type, value)
            if len(value) <= _FRAGMENT_CACHED:
                fragments[value] = html
        parts.append(html)
    lines.append("".join(parts))
    want = text.count("\n") + 1
    return lines[:want] + ["" for _ in range(want - len(lines))]


# The HTML of the short tokens met so far, by token type and text: most tokens are names, operators and
# blanks that recur all over a package's source.
_FRAGMENTS: dict[Any, dict[str, str]] = {}
_FRAGMENT_CACHED = 64


def _fragment(token_type: Any, value: str) -> str:
    """A token (a part of one line) as HTML: a span of its class, or bare text where its class has no look."""
    if not value:
        return ""
    css = _css_class(token_type)
    return f'<span class="{css}">{escape(value, False)}</span>' if css else escape(value, False)


def _code(text: str) -> Markup:
    """Highlight a snippet of Python the analysis wrote."""
    return Markup("\n".join(_highlight("snippet.py", text)))


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False})


def _md(text: str | None) -> Markup:
    """Render analysis text (Markdown, raw HTML left escaped)."""
    return Markup(_markdown().render(text or ""))


def _md_inline(text: str | None) -> Markup:
    return Markup(_markdown().renderInline(text or ""))


def _message(line: CatalogLine) -> Markup:
    """The message template with its placeholders marked."""
    message = line.record.errorMessage
    out, at = [], 0
    for placeholder in sorted(line.extraction.placeholders, key=lambda p: p.start):
        if placeholder.start < at or placeholder.end > len(message):
            continue
        out.append(escape(message[at : placeholder.start], False))
        out.append(f'<mark class="ph">{escape(message[placeholder.start : placeholder.end], False)}</mark>')
        at = placeholder.end
    out.append(escape(message[at:], False))
    return Markup("".join(out))


def _haystack(line: CatalogLine) -> str:
    """The text the index's search box looks in, but for what the row holds already (its id, and its file and
    class as positions in the names, which search.js adds back): message, slug, function, fields and flags."""
    record = line.record
    parts = [record.errorMessage, record.slug, line.extraction.function]
    for ref in line.extraction.fields:
        parts.append(ref.expression)
        if ref.class_ and ref.field:
            parts.append(f"{ref.class_}.{ref.field}")
        parts.extend(ref.flags)
        if ref.via:
            parts.append(ref.via)
    return " ".join(" ".join(parts).lower().split())


def _word_diff(old: str, new: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Split two messages into (kind, words) runs: equal, or removed on the left and added on the right."""
    a, b = old.split(), new.split()
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(("same", " ".join(a[i1:i2])))
            right.append(("same", " ".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(("del", " ".join(a[i1:i2])))
        if j2 > j1:
            right.append(("ins", " ".join(b[j1:j2])))
    return left, right


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("extractor.publish", f"{_ASSETS}/templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,  # compiled once: no stat of the template files for each page
    )
    environment.filters["md"] = _md
    environment.filters["md_inline"] = _md_inline
    environment.filters["code"] = _code
    environment.filters["short"] = lambda sha: sha[:10]
    environment.globals["word_diff"] = _word_diff
    environment.tests["web_address"] = is_web_address
    return environment


def _static(name: str) -> bytes:
    return resources.files("extractor.publish").joinpath(_ASSETS, "static", name).read_bytes()


# The source and snippets sit on light backgrounds (the raise line's is the darkest); Pygments' styles aim
# at white, some colours only just, so each colour is darkened until it reads on the darkest one (WCAG AA).
_DARKEST_BACKGROUND = "fff5d6"
_CONTRAST = 4.6


def _luminance(color: str) -> float:
    channels = [int(color[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _readable(color: str) -> str:
    """Darken a colour (hex, no #) until it has the contrast AA asks for on the darkest code background."""
    background = _luminance(_DARKEST_BACKGROUND) + 0.05
    rgb = [int(color[i : i + 2], 16) for i in (0, 2, 4)]
    while background / (_luminance("".join(f"{c:02x}" for c in rgb)) + 0.05) < _CONTRAST:
        rgb = [int(c * 0.95) for c in rgb]
    return "".join(f"{c:02x}" for c in rgb)


def _stylesheet() -> bytes:
    """The site's stylesheet, then a rule per token class the Pygments style gives a look."""
    from pygments.token import STANDARD_TYPES

    rules = []
    for token_type, _ in _style():
        look = _style().style_for_token(token_type)
        css = _css_class(token_type)
        if not css or token_type not in STANDARD_TYPES:
            continue
        declarations = [f"color: #{_readable(look['color'])}"] if look["color"] else []
        declarations += ["font-weight: bold"] if look["bold"] else []
        declarations += ["font-style: italic"] if look["italic"] else []
        if declarations:
            rules.append(f".code .{css} {{ {'; '.join(declarations)} }}")
    return _static("site.css") + f"\n/* Pygments' {_STYLE} style */\n".encode() + "\n".join(rules).encode() + b"\n"


@dataclass(frozen=True)
class _Pages:
    """What the pages of a site are rendered from: the records (analysis overlaid), diffs and histories."""

    lines: tuple[CatalogLine, ...]
    diffs: Sequence[PublishedDiff]
    history: Mapping[str, Sequence[HistoryEvent]]
    site: dict[str, Any]
    by_id: dict[str, CatalogLine]


def _pages(
    catalog: LoadedCatalog,
    analysis: Mapping[str, AnalysisEntry] | None,
    diffs: Sequence[PublishedDiff],
    history: Mapping[str, Sequence[HistoryEvent]] | None,
) -> _Pages:
    lines = overlay(catalog.lines, analysis or {})
    repo = lines[0].record.repo if lines else (catalog.manifest.repo if catalog.manifest else "")
    site = {"repo": repo, "sha": catalog.sha, "revision": catalog.revision, "records": len(lines)}
    return _Pages(lines, diffs, history or {}, site, {line.record.id: line for line in lines})


def _record_pages(pages: _Pages, lines: Sequence[CatalogLine]) -> Iterator[tuple[str, bytes]]:
    """Render the pages of these records (each file's windows highlighted once, for all its records)."""
    highlighter = _Highlighter()
    highlighter.add(lines)
    record_page = _environment().get_template("record.html")
    for line in lines:
        record = line.record
        yield (
            f"errors/{record.id}.html",
            record_page.render(
                site=pages.site,
                root="../",
                line=line,
                record=record,
                message=_message(line),
                condition=condition_in_words(line),
                source=highlighter.window(record, range(record.lineNumber, line.extraction.endLineNumber + 1)),
                resolved=[f for f in line.extraction.fields if f.resolved],
                unresolved=[f for f in line.extraction.fields if not f.resolved],
                related=[pages.by_id[i] for i in line.extraction.related if i in pages.by_id],
                history=pages.history.get(record.id, ()),
                analysed=any(getattr(record, name) is not None for name in ANALYSIS_FIELDS),
            ).encode(),
        )


def _other_pages(pages: _Pages) -> dict[str, bytes]:
    """Render the diff pages, the index, the list of all errors and the assets."""
    environment = _environment()
    lines, site, diffs = pages.lines, pages.site, pages.diffs
    files: dict[str, bytes] = {}
    diff_page = environment.get_template("diff.html")
    for diff in diffs:
        files[f"diffs/{diff.sha}.html"] = diff_page.render(
            site=site, root="../", diff=diff, document=diff.document, live=pages.by_id.keys()
        ).encode()

    rows = [_Row(line, first_words(line.record.errorMessage, limit=_FIRST_WORDS, more="…")) for line in lines]
    names = {
        "file": sorted({line.record.filePath for line in lines}),
        "class": sorted({line.record.errorClass for line in lines}),
        "type": sorted({line.record.errorType.value for line in lines}),
    }
    positions = {key: {name: i for i, name in enumerate(values)} for key, values in names.items()}
    # A row: id, first words, file, class and type (as positions in `names`), line, and the searched text.
    search = {
        "names": names,
        "rows": [
            [
                row.line.record.id,
                row.first_words,
                positions["file"][row.line.record.filePath],
                positions["class"][row.line.record.errorClass],
                positions["type"][row.line.record.errorType.value],
                row.line.record.lineNumber,
                _haystack(row.line),
            ]
            for row in rows
        ],
    }
    counts = {
        "file": Counter(line.record.filePath for line in lines),
        "class": Counter(line.record.errorClass for line in lines),
        "type": Counter(line.record.errorType.value for line in lines),
    }
    files["index.html"] = (
        environment.get_template("index.html")
        .render(
            site=site,
            root="",
            rows=rows,
            names=names,
            counts=counts,
            diffs=diffs,
            # "<" only occurs inside JSON strings, where \u003c means the same and cannot end the script.
            search_data=Markup(orjson.dumps(search).decode().replace("<", "\\u003c")),
        )
        .encode()
    )
    files["all.html"] = environment.get_template("all.html").render(site=site, root="", rows=rows).encode()
    files["assets/site.css"] = _stylesheet()
    files["assets/search.js"] = _static("search.js")
    marker = {"repo": site["repo"], "sha": site["sha"], "records": len(lines), "diffs": len(diffs)}
    files[MARKER] = orjson.dumps(marker) + b"\n"
    return files


def render_site(
    catalog: LoadedCatalog,
    *,
    analysis: Mapping[str, AnalysisEntry] | None = None,
    diffs: Sequence[PublishedDiff] = (),
    history: Mapping[str, Sequence[HistoryEvent]] | None = None,
) -> dict[str, bytes]:
    """Render every page and asset of a catalog's site: {relative path: bytes}."""
    pages = _pages(catalog, analysis, diffs, history)
    return {**dict(_record_pages(pages, pages.lines)), **_other_pages(pages)}


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


def _swap_in(output: Path, fill: Callable[[Path], _T], *, link: bool) -> _T:
    """Have `fill` write a site into a new directory beside `output`, then swap it in; return what it returned.

    `output` may be missing, empty, a site built here (it holds MARKER), or a symlink to one (see
    `check_output`). A symlink (and with `link`, a missing `output`) is switched atomically to the new
    directory; a directory is replaced by two renames, between which it is missing for an instant but never
    half written.
    """
    check_output(output)
    parent = output.absolute().parent
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
        if output.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".old", dir=parent))
            try:
                os.replace(output, trash / "site")
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


def check_output(output: Path) -> None:
    """Refuse, before any work, an `output` a site cannot be swapped into: a file or a symlink that leads
    nowhere at its path or above it (see `check_folder`); a folder with something in it, or a symlink to a
    folder, that is not a site built here; a folder the new site cannot be written beside (the nearest one
    there is, where what is missing of the way would be made), or a site there that cannot be moved away."""
    check_folder(output)
    if output.is_symlink():
        target = output.resolve()
        if not (target / MARKER).exists():
            raise ExtractorError(f"{output} points at {target}, which is not a site built by extractor")
    elif output.exists() and (not output.is_dir() or (any(output.iterdir()) and not (output / MARKER).exists())):
        raise ExtractorError(f"{output} exists and is not a site built by extractor: not replacing it")
    beside = next(folder for folder in output.absolute().parents if folder.exists())
    # A folder moved into another one gets its `..` entry rewritten: the old site is written too.
    moved = output.is_dir() and not output.is_symlink()
    for folder in (beside, output) if moved else (beside,):
        if not os.access(folder, os.W_OK | os.X_OK):
            readonly = os.statvfs(folder).f_flag & os.ST_RDONLY
            why = os.strerror(errno.EROFS if readonly else errno.EACCES)
            raise ExtractorError(f"cannot write {output}: {folder}: {why}")


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
    work = {path: sum(_PAGE_WORK + len(_numbers(line.record)) for line in group) for path, group in by_file.items()}
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
    pages, shares = cast(tuple[_Pages, list[list[CatalogLine]]], handed())
    return _write_files(staging, _record_pages(pages, shares[index]))


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


def _fill(pages: _Pages, staging: Path, workers: int) -> tuple[int, int]:
    """Write every page of a site into `staging`, the record pages shared among `workers` processes."""
    if workers <= 1:
        counts = [_write_files(staging, _record_pages(pages, pages.lines))]
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
    counts.append(_write_files(staging, _other_pages(pages).items()))
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
) -> SiteSummary:
    """Render a catalog's site straight into a new directory and swap it into `output` (see `_swap_in` for
    `link`). `workers`: processes that render record pages (default: up to 2, on large catalogs)."""
    pages = _pages(catalog, analysis, diffs, history)
    workers = _workers(len(pages.lines)) if workers is None else workers
    with collector_paused():  # rendering makes strings by the million, few cycles: the collector only slows it
        files, size = _swap_in(output, lambda staging: _fill(pages, staging, workers), link=link)
    return SiteSummary(records=len(pages.lines), diffs=len(diffs), files=files, bytes=size)
