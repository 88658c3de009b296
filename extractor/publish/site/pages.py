# Pages: a catalog as the site's pages in memory (an index with search, a page per record and per published diff).
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from html import escape
from importlib import resources
from typing import Any

import orjson
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from extractor.catalog.load import LoadedCatalog
from extractor.model.records import CatalogLine
from extractor.publish.site.highlight import STYLE, Highlighter, css_class, highlight, style
from extractor.publish.site.inputs import HistoryEvent, PublishedDiff
from extractor.query.analysis import ANALYSIS_FIELDS, AnalysisEntry, overlay
from extractor.query.explain import condition_in_words
from extractor.query.listing import first_words
from extractor.query.similarity import word_runs
from extractor.util.markdown import inline_code, is_web_address
from extractor.util.progress import counted

MARKER = ".extractor-site"  # names a directory this module built, so that replacing it deletes nothing else
BUILT = ".extractor-site-files"  # what the build made: the rest of a site's folder is a person's, kept
_ASSETS = "assets"


_FIRST_WORDS = 80


@dataclass(frozen=True)
class _Row:
    """A record as the index lists it."""

    line: CatalogLine
    first_words: str


def _code(text: str) -> Markup:
    """Highlight a snippet of Python the analysis wrote."""
    return Markup("\n".join(highlight("snippet.py", text)))


@cache
def _markdown() -> Any:
    """CommonMark without raw HTML and without images (nothing a page shows is fetched from elsewhere); a link
    only to an http(s) address (not `mailto:`, `//host`, `javascript:`): any other stays text."""
    from markdown_it import MarkdownIt

    class WebLinksOnly(MarkdownIt):
        def validateLink(self, url: str) -> bool:
            return is_web_address(url)

    return WebLinksOnly("commonmark", {"html": False, "linkify": False}).disable("image")


def _md(text: str | None) -> Markup:
    """Render analysis text (Markdown, raw HTML left escaped)."""
    return Markup(_markdown().render(text or ""))


def _md_inline(text: str | None) -> Markup:
    return Markup(_markdown().renderInline(text or ""))


def _message(line: CatalogLine) -> Markup:
    """The message template with its placeholders marked, each by its index (`data-p`: record.js fills in the
    values a paste showed, carried in the address from the index's answer)."""
    message = line.record.errorMessage
    out, at = [], 0
    placeholders = sorted(enumerate(line.extraction.placeholders), key=lambda pair: pair[1].start)
    for index, placeholder in placeholders:
        if placeholder.start < at or placeholder.end > len(message):
            continue
        out.append(escape(message[at : placeholder.start], False))
        shown = escape(message[placeholder.start : placeholder.end], False)
        out.append(f'<mark class="ph" data-p="{index}">{shown}</mark>')
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
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for same, old_words, new_words in word_runs(old, new):
        if same:
            left.append(("same", old_words))
            right.append(("same", new_words))
            continue
        if old_words:
            left.append(("del", old_words))
        if new_words:
            right.append(("ins", new_words))
    return left, right


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("extractor.publish.site", f"{_ASSETS}/templates"),
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
    environment.filters["counted"] = counted  # (`1 class`, `2 classes`: every count the pages say)
    environment.filters["first_words"] = lambda text, limit: first_words(text, limit=limit, more="…")
    environment.globals["word_diff"] = _word_diff
    environment.tests["web_address"] = is_web_address
    return environment


def static(name: str) -> bytes:
    return resources.files("extractor.publish.site").joinpath(_ASSETS, "static", name).read_bytes()


FIND_CONSTANTS = "find_constants.js"  # the static asset find_constants() writes, committed beside find.js


def find_constants() -> bytes:
    """find_constants.js: the constants and tables find.js shares with `match` (find.py's SHARED), a script
    that sets `window.EXTRACTOR_FIND_CONSTANTS` in a page and is a CommonJS module in Node. The site ships
    the committed file, which tests/test_find_parity.py compares with this (`python
    scripts/gen_find_constants.py` writes it)."""
    from extractor.query.match.find import SHARED

    entries = ",\n".join(f"    {json.dumps(name)}: {json.dumps(value)}" for name, value in SHARED.items())
    return (
        "// Generated by `python scripts/gen_find_constants.py` from find.py's SHARED (extractor/query/match/): do\n"
        "// not edit. The constants and tables find.js shares with `extractor match`; tests/test_find_parity.py\n"
        "// fails when this file is not what the script writes now.\n"
        "(function (root) {\n"
        '  "use strict";\n'
        f"  var constants = {{\n{entries}\n  }};\n"
        '  if (typeof module === "object" && module.exports) module.exports = constants;\n'
        "  else root.EXTRACTOR_FIND_CONSTANTS = constants;\n"
        "})(this);\n"
    ).encode()


@dataclass(frozen=True)
class Pages:
    """What the pages of a site are rendered from: the records (analysis overlaid), diffs and histories."""

    lines: tuple[CatalogLine, ...]
    diffs: Sequence[PublishedDiff]
    history: Mapping[str, Sequence[HistoryEvent]]
    site: dict[str, Any]
    by_id: dict[str, CatalogLine]


def pages_of(
    catalog: LoadedCatalog,
    analysis: Mapping[str, AnalysisEntry] | None,
    diffs: Sequence[PublishedDiff],
    history: Mapping[str, Sequence[HistoryEvent]] | None,
) -> Pages:
    from extractor.query.reproductions import attach, release_of

    # The analysis overlaid, and what `reproduce` ran for the release (shown as run, with the version it ran on).
    release = release_of(catalog.revision)
    lines = tuple(attach(overlay(catalog.lines, analysis or {}), "vllm", release))
    repo = lines[0].record.repo if lines else (catalog.manifest.repo if catalog.manifest else "")
    site = {"repo": repo, "sha": catalog.sha, "revision": catalog.revision, "release": release, "records": len(lines)}
    return Pages(lines, diffs, history or {}, site, {line.record.id: line for line in lines})


def record_pages(pages: Pages, lines: Sequence[CatalogLine]) -> Iterator[tuple[str, bytes]]:
    """Render the pages of these records (each file's windows highlighted once, for all its records)."""
    highlighter = Highlighter()
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
                condition=condition_in_words(line, code=inline_code),  # (a span its source cannot end)
                source=highlighter.window(record, range(record.lineNumber, line.extraction.endLineNumber + 1)),
                resolved=[f for f in line.extraction.fields if f.resolved],
                unresolved=[f for f in line.extraction.fields if not f.resolved],
                related=[pages.by_id[i] for i in line.extraction.related if i in pages.by_id],
                history=pages.history.get(record.id, ()),
                analysed=any(getattr(record, name) is not None for name in ANALYSIS_FIELDS),
            ).encode(),
        )


def paste_data(lines: Sequence[CatalogLine]) -> dict[str, Any]:
    """What the index's search answers a pasted error with, as `match` does (find.js reads it): the finder's
    tables over the catalog's templates; for each template its records (the first in file order is the one
    `match` names), its message and where each placeholder stands in it (to fill in the values)."""
    from extractor.query.match.matcher import Matcher
    from extractor.query.match.pattern import templates_of

    templates = templates_of(lines)
    first: dict[tuple[str, str], CatalogLine] = {}
    for line in lines:
        first.setdefault((line.record.errorClass, line.record.messagePattern), line)
    data = Matcher(templates).to_json()
    data["records"] = [
        [s.id for s in sorted(template.places(), key=lambda s: (s.filePath, s.lineNumber))] for template in templates
    ]
    data["messages"] = [template.errorMessage for template in templates]
    data["spans"] = [
        [[p.start, p.end] for p in first[template.errorClass, template.messagePattern].extraction.placeholders]
        for template in templates
    ]
    return data


def other_pages(pages: Pages) -> dict[str, bytes]:
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
    files["assets/site.css"] = stylesheet()
    files["assets/search.js"] = static("search.js")
    files["assets/find.js"] = static("find.js")
    files[f"assets/{FIND_CONSTANTS}"] = static(FIND_CONSTANTS)
    files["assets/record.js"] = static("record.js")
    # A script, not JSON to fetch: a page read from file:// may not fetch; "<" is escaped as in the index.
    paste = orjson.dumps(paste_data(lines)).decode().replace("<", "\\u003c")
    files["assets/paste.js"] = f"window.EXTRACTOR_PASTE = {paste};\n".encode()
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
    pages = pages_of(catalog, analysis, diffs, history)
    return {**dict(record_pages(pages, pages.lines)), **other_pages(pages)}


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


def stylesheet() -> bytes:
    """The site's stylesheet, then a rule per token class the Pygments style gives a look."""
    from pygments.token import STANDARD_TYPES

    rules = []
    for token_type, _ in style():
        look = style().style_for_token(token_type)
        css = css_class(token_type)
        if not css or token_type not in STANDARD_TYPES:
            continue
        declarations = [f"color: #{_readable(look['color'])}"] if look["color"] else []
        declarations += ["font-weight: bold"] if look["bold"] else []
        declarations += ["font-style: italic"] if look["italic"] else []
        if declarations:
            rules.append(f".code .{css} {{ {'; '.join(declarations)} }}")
    return static("site.css") + f"\n/* Pygments' {STYLE} style */\n".encode() + "\n".join(rules).encode() + b"\n"
