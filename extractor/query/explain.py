# Explain: one record as a page: message, where, the condition in words, the fields and flags, related errors.
from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from extractor.errors import ExtractorError
from extractor.model.records import CatalogLine, ConditionKind, FieldRef, ServeLine
from extractor.pipeline.write import dumps_document
from extractor.query.match.answer import Said
from extractor.query.match.matcher import Matcher
from extractor.query.match.pattern import MatchTemplate, templates_of
from extractor.query.similarity import WITHIN_FUNCTION, similarity
from extractor.util import markdown
from extractor.util.progress import one_line

if TYPE_CHECKING:
    from extractor.catalog.load import LoadedCatalog
    from extractor.catalog.spec import CatalogsSpec
    from extractor.pipeline.extract import ExtractOptions
    from extractor.query.match.index import MatchIndex

__all__ = ["Explanation", "UserFix", "condition_in_words", "explain_in", "find", "find_in", "history", "render"]


@dataclass(frozen=True)
class UserFix:
    """A change of the user's own `vllm serve` line: derived from the check's condition, and run or not."""

    before: ServeLine  # the reproduction's line with the paste's values
    after: ServeLine
    change: str  # `set --max-num-batched-tokens 8192 (was 2048)`
    ran: str | None = None  # `vllm==0.28.0` when both lines were run: before raised here, after did not


@dataclass(frozen=True)
class Explanation:
    """A record found by id, slug or rendered text, with the values the text showed."""

    line: CatalogLine
    values: dict[str, str]
    related: tuple[CatalogLine, ...]
    history: str = ""  # in which releases, where, and what became of it (several catalogs given)
    fixes: tuple[UserFix, ...] = ()  # the user's own line fixed, for the values the text showed


def _by_name(keys: dict[str, list[str]], query: str) -> list[str]:
    """The keys of `keys` (ids and slugs) `query` names: itself, else every key it is a prefix of (a
    prefix of at least 4 characters: shorter ones are read as a rendered message)."""
    if query in keys:
        return [query]
    if len(query) < 4:
        return []
    return sorted(key for key in keys if key.startswith(query))


def _unique(named: list[str], owners: dict[str, list[str]], query: str) -> str | None:
    """The one owner the named keys share, None if none; several is an error that lists them."""
    found = sorted({owner for key in named for owner in owners[key]})
    if len(found) > 1:  # shown as typed: the slugs a slug prefix names, the ids an id prefix names
        listed = ", ".join(named[:5]) + (", ..." if len(named) > 5 else "")
        raise ExtractorError(f"{query!r} is the start of {len(found)} records' ids or slugs ({listed}); say more")
    return found[0] if found else None


def find(lines: Sequence[CatalogLine], query: str, *, origin: str = "") -> Explanation | None:
    """Look a record up by id, slug, a unique prefix of either, then as a rendered message (through `match`);
    `origin` names the catalog's file in what is wrong with one of its lines."""
    position = {line.record.id: index for index, line in enumerate(lines)}
    names: dict[str, list[str]] = {}
    for line in lines:
        names.setdefault(line.record.id, []).append(line.record.id)
        names.setdefault(line.record.slug, []).append(line.record.id)
    found_id = _unique(_by_name(names, query), names, query)
    values: dict[str, str] = {}
    if found_id is None or found_id not in position:
        result = Matcher(templates_of(lines, origin=origin)).match(query)
        matches = result.matches
        if matches:
            found_id, values = matches[0].site.id, matches[0].values
        elif result.elsewhere:  # (another prints the text: no record is picked by its words)
            raise Theirs(query, result.elsewhere)
        else:  # (words of the message, as `list --grep` finds them: `max_num_batched_tokens is smaller than`)
            messages = {line.record.id: (line.record.slug, line.record.errorMessage) for line in lines}
            found_id = _by_words(messages, query)
            if found_id is None:
                return None
    found = lines[position[found_id]]
    related = tuple(lines[position[i]] for i in found.extraction.related if i in position)
    return Explanation(found, values, related)


class NoRecord(LookupError):
    """No record answers a query; `hint` says the slug most like it (`; did you mean SLUG?`), or nothing."""

    def __init__(self, query: str, slugs: Iterable[str]) -> None:
        from extractor.util.suggest import close_to

        guess = close_to(query.strip(), set(slugs)) if len(query.strip()) >= 4 else None
        self.hint = f"; did you mean {guess}?" if guess else ""
        super().__init__(query)


class Theirs(NoRecord):
    """No record answers a query with confidence, and others print its text (`match`'s `elsewhere`): who."""

    def __init__(self, query: str, said: Sequence[Said]) -> None:
        super().__init__(query, ())
        self.said = tuple(said)

    def words(self) -> str:
        return "; ".join(f"{s.elsewhere.words(s.values)}: {s.elsewhere.errorMessage}" for s in self.said)


_WORD = re.compile(r"\w+")


def _by_words(messages: Mapping[str, tuple[str, str]], query: str) -> str | None:
    """The one record (key -> (slug, message)) whose message holds every word of `query` (any case), those
    holding them in order first; several alike is an error that lists them."""
    asked = [word.casefold() for word in _WORD.findall(query)]
    if not asked:
        return None
    held: list[tuple[bool, str, str]] = []
    for key, (slug, message) in messages.items():
        words = [word.casefold() for word in _WORD.findall(message)]
        if set(asked) <= set(words):
            places = iter(words)
            held.append((all(word in places for word in asked), key, slug))  # (in order: a subsequence)
    ordered = [item for item in held if item[0]] or held
    if len(ordered) > 1:
        listed = ", ".join(sorted(slug for _, _, slug in ordered)[:5]) + (", ..." if len(ordered) > 5 else "")
        raise ExtractorError(f"{len(ordered)} records' messages hold the words of {query!r} ({listed}); say more")
    return ordered[0][1] if ordered else None


def find_in(catalog: LoadedCatalog, query: str, *, origin: str = "") -> Explanation | None:
    """`find` in a catalog's lines; the record with its reproduction, when one was run for the release."""
    from extractor.query.reproductions import attach_line

    found = find(catalog.lines, query, origin=origin)
    if found is None:
        return None
    return Explanation(attach_line(found.line, "vllm", catalog.revision), found.values, found.related, found.history)


def history(template: MatchTemplate, labels: Sequence[str], templates: Sequence[MatchTemplate]) -> str:
    """Say in which of the catalogs `labels` names a template was raised, where, and what became of it."""
    held = set(template.releases)
    parts: list[str] = []
    run: list[str] = []
    for label in [*labels, ""]:
        if label in held:
            run.append(label)
            continue
        if not run:
            continue
        where = [f"{s.filePath}:{s.lineNumber}" for s in template.places() if set(s.releases) & set(run)]
        span = run[0] if len(run) == 1 else f"{run[0]} to {run[-1]}"
        places = ", ".join(where) if len(where) <= 3 else f"{where[0]}, ... {where[-1]} ({len(where)} places)"
        parts.append(f"raised in {span} at {places}")
        if label:
            parts.append(f"{_fate(template, run[-1], label, templates)} in {label}")
        run = []
    return "; ".join(parts)


def _fate(template: MatchTemplate, last: str, label: str, templates: Sequence[MatchTemplate]) -> str:
    """What happened to a template between two catalogs: reworded (its function raises a message of its
    class there that reads like it, as diff pairs rewordings within a function), or gone."""
    places = {(s.filePath, s.function) for s in template.places() if last in s.releases}
    for other in templates:
        if other is template or other.errorClass != template.errorClass:
            continue
        there = any(label in s.releases and (s.filePath, s.function) in places for s in other.places())
        if there and similarity(template.errorMessage, other.errorMessage) >= WITHIN_FUNCTION:
            return "reworded"
    return "gone"


def explain_in(specs: Sequence[CatalogsSpec], query: str, *, repo: str, options: ExtractOptions) -> Explanation:
    """Explain `query` against the catalogs `specs` names; with several, say in which of them it was raised.
    No record answers it: NoRecord."""
    from extractor.catalog.load import open_catalog
    from extractor.catalog.spec import each_catalog
    from extractor.query.match.index import match_index, origin

    index = None
    if len(each_catalog(specs)) > 1:
        index = match_index(specs, repo=repo, options=options)
    if index is None or len(index.specs) == 1:  # (one catalog; or the same named twice: a folder, its records)
        (spec,) = each_catalog(specs) if index is None else index.specs
        catalog = open_catalog(spec, repo=repo, options=options)
        explained = find_in(catalog, query, origin=origin(spec))
        if explained is None:
            raise NoRecord(query, (line.record.slug for line in catalog.lines))
        return explained
    found = _find_template(index, query)
    if found is None:
        raise NoRecord(query, (site.slug for template in index.matcher.templates for site in template.places()))
    template, values = found
    newest = max(index.labels.index(release) for release in template.releases)
    catalog = open_catalog(index.specs[newest], repo=repo, options=options)
    explanation = find_in(catalog, next(s.id for s in template.places() if index.labels[newest] in s.releases))
    if explanation is None:  # (its id, in the catalog the index read it from: not expected)
        raise NoRecord(query, ())
    return Explanation(
        explanation.line, values, explanation.related, history(template, index.labels, index.matcher.templates)
    )


def _find_template(index: MatchIndex, query: str) -> tuple[MatchTemplate, dict[str, str]] | None:
    templates = index.matcher.templates
    named = {f"{t.places()[-1].slug} [{t.places()[-1].id}]": t for t in templates}
    names: dict[str, list[str]] = {}
    for name, template in named.items():
        for site in template.places():
            for key in (site.id, site.slug):
                owners = names.setdefault(key, [])
                if name not in owners:
                    owners.append(name)
    owner = _unique(_by_name(names, query), names, query)
    if owner is not None:
        return named[owner], {}
    result = index.matcher.match(query)
    if result.matches:
        return result.matches[0].template, result.matches[0].values
    if result.elsewhere:
        raise Theirs(query, result.elsewhere)
    by_words = {name: (template.places()[-1].slug, template.errorMessage) for name, template in named.items()}
    chosen = _by_words(by_words, query)
    return (named[chosen], {}) if chosen is not None else None


def condition_in_words(line: CatalogLine, *, code: Callable[[str], str] = "`{}`".format) -> str:
    """Say when a raise runs: `raised when a and not b`, from its condition chain; `code` sets a test's
    source into the text (markdown.code for a page: a span that nothing in the test can end)."""
    when = _when(line, code=code)
    return f"raised when {when}" if when else "raised whenever this code runs"


def _when(line: CatalogLine, *, code: Callable[[str], str] = "`{}`".format) -> str:
    """The condition chain in words, `a and not b`; empty for a raise no condition guards."""
    parts = []
    for condition in line.extraction.conditions:
        test = code(condition.test)
        kind = condition.kind
        if kind in (ConditionKind.IF, ConditionKind.ELIF, ConditionKind.WHILE, ConditionKind.MATCH_CASE):
            parts.append(f"not {test}" if condition.negated else test)
        elif kind is ConditionKind.FOR:
            parts.append(f"after iterating {test} to the end" if condition.negated else f"while iterating {test}")
        elif kind is ConditionKind.EXCEPT:
            parts.append(f"handling {test}" if condition.test else "handling any exception")
        elif kind is ConditionKind.WITH:
            parts.append(f"inside {code(f'with {condition.test}')}")
        elif kind is ConditionKind.TRY:
            parts.append("inside a try block")
        elif kind is ConditionKind.FINALLY:
            parts.append("in a finally block")
    return " and ".join(parts)


def _how_set(field: FieldRef, *, cell: Callable[[str], str] = str, code: Callable[[str], str] = "`{}`".format) -> str:
    """How a field is set, in words: its flags, the JSON key of the flag that takes it, or why it cannot be;
    `cell` and `code` set its words and its key into a page (a Markdown table's cell, a code span)."""
    if field.flags:  # (and what may undo them: vLLM setting the field itself)
        return cell(", ".join(field.flags) + (f"; but {field.reason}" if field.reason else ""))
    if field.via:
        return f"{cell(field.via)} (JSON key {code(field.key or '')})"
    return cell(field.reason or "")


# What a docstring's sentence may not bring into a page's table: what ends the cell, HTML, links (its own
# Markdown, `code` and *emphasis*, is kept: the docstring's author wrote it). Inside its code spans, where a
# backslash is shown as typed, only the pipe that a table would read.
_PROSE = str.maketrans({char: "\\" + char for char in "\\|<>&[]"})
_SPANS = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)


def _prose(text: str) -> str:
    """A docstring's sentence set into a Markdown table's cell: on one line, its code spans and emphasis
    kept; a pipe, HTML and links shown as typed."""
    out, position = [], 0
    for span in _SPANS.finditer(text):
        out += [text[position : span.start()].translate(_PROSE), span[0].replace("|", "\\|")]
        position = span.end()
    out.append(text[position:].translate(_PROSE))
    return " ".join("".join(out).splitlines())


def _first_sentence(text: str | None) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


def _short(line: CatalogLine, limit: int) -> str:
    """A message cut to about `limit` characters, never inside a placeholder, on one line."""
    message = line.record.errorMessage
    if len(message) <= limit:
        return " ".join(message.split())
    cut = limit
    for placeholder in line.extraction.placeholders:
        if placeholder.start < cut < placeholder.end:
            cut = placeholder.start if placeholder.start > 0 else placeholder.end
    return " ".join(message[:cut].split()) + " ..."


def render(explanation: Explanation, *, format: str, lineage: str | None = None) -> str:
    """Render an explanation as text, Markdown or JSON; `lineage` is the record's history in a sentence
    (when a history was given), said last."""
    if format == "json":
        return _json(explanation, lineage)
    page = _page(explanation, format)
    if lineage is None:
        return page
    if format == "markdown":
        return page + f"\n**History**: {markdown.text(lineage)}\n"
    return page + f"\nHistory: {lineage}\n"


def _json(explanation: Explanation, lineage: str | None) -> str:
    line, record = explanation.line, explanation.line.record
    document = {
        "record": record.model_dump(mode="json"),
        "extraction": line.extraction.model_dump(mode="json", by_alias=True),
        "values": explanation.values,
        "condition": condition_in_words(line),
        "related": [r.record.model_dump(mode="json") for r in explanation.related],
    }
    if explanation.history:
        document["releases"] = explanation.history
    if lineage is not None:
        document["history"] = lineage
    return dumps_document(document).decode()


def _reproduction_text(line: CatalogLine) -> list[str]:
    """The Reproduce and Fix parts of a text page: the programs run, or why there is none."""
    made = line.extraction.reproduction
    if made is None:
        return []
    if not made.reproduced:
        return ["", f"Reproduce  not reproduced against {made.verifiedWith}: {made.reason}"]
    out = ["", f"Reproduce  (run against {made.verifiedWith}: it raises this error)"]
    if made.python is not None:
        out += _indented(made.python)
    if made.serve is not None:
        out.append(f"  vllm serve line (run: it raises this error):  vllm serve ./model {shlex.join(made.serve.argv)}")
    elif made.flags is not None:
        out.append(f"  flags:  vllm serve {made.flags}")
    out += ["  printed:", *_indented(made.message or "")]
    if made.fix is not None:
        then = f" (then: record {made.fix.then})" if made.fix.then else ""
        out += ["", f"Fix        {made.fix.change}{then}, run against {made.verifiedWith}:"]
        out += _indented(made.fix.python)
        if made.fix.serve is not None:
            out.append(f"  vllm serve line (run: it passes):  vllm serve ./model {shlex.join(made.fix.serve.argv)}")
        elif made.fix.flags is not None:
            out.append(f"  flags:  vllm serve {made.fix.flags}")
    return out


def _fixes_text(fixes: Sequence[UserFix]) -> list[str]:
    """The user's fixes: each change, its line, and whether it was run."""
    if not fixes:
        return []
    out = ["", "Your fix   for the values above (your other flags stay as they are):"]
    for fix in fixes:
        said = f"run against {fix.ran}: the check passes" if fix.ran else "derived from the check's condition, not run"
        out += [f"  {fix.change} ({said})", *_indented(fix.after.command())]
    return out


def _fixes_markdown(fixes: Sequence[UserFix]) -> list[str]:
    if not fixes:
        return []
    out = ["", "## Your fix", "", "For the values above (your other flags stay as they are):"]
    for fix in fixes:
        ran = f"run against {markdown.inline_code(fix.ran)}: the check passes" if fix.ran else ""
        said = ran or "derived from the check's condition, not run"
        out += ["", f"- {markdown.inline_code(fix.change)}: {said}", ""]
        out += markdown.fence(fix.after.command(), "sh")
    return out


def _indented(text: str) -> list[str]:
    return [f"    {one_line(row, limit=None)}" if row.strip() else "" for row in text.rstrip("\n").splitlines()]


def _reproduction_markdown(line: CatalogLine) -> list[str]:
    made = line.extraction.reproduction
    if made is None:
        return []
    if not made.reproduced:
        reason = markdown.text(made.reason or "")
        return ["", "## Reproduce", "", f"Not reproduced against {markdown.inline_code(made.verifiedWith)}: {reason}."]
    out = ["", "## Reproduce", "", f"Run against {markdown.inline_code(made.verifiedWith)}; it raises this error:", ""]
    if made.python is not None:
        out += markdown.fence(made.python.rstrip("\n"), "python")
    if made.serve is not None:
        out += ["", *markdown.fence(f"vllm serve ./model {shlex.join(made.serve.argv)}", "sh")]
    elif made.flags is not None:
        out += ["", *markdown.fence(f"vllm serve {made.flags}", "sh")]
    out += ["", *markdown.fence(made.message or "")]
    if made.fix is not None:
        then = f" (then record {markdown.inline_code(made.fix.then)} fires)" if made.fix.then else ""
        out += ["", "## Fix", "", f"{markdown.text(made.fix.change)}{then}; run against "
                f"{markdown.inline_code(made.verifiedWith)}, it no longer raises this error:", ""]  # fmt: skip
        out += markdown.fence(made.fix.python.rstrip("\n"), "python")
        if made.fix.flags is not None:
            out += ["", *markdown.fence(f"vllm serve {made.fix.flags}", "sh")]
    return out


def _page(explanation: Explanation, format: str) -> str:
    line, record = explanation.line, explanation.line.record
    resolved = [f for f in line.extraction.fields if f.resolved]
    unresolved = [f for f in line.extraction.fields if not f.resolved]
    where = f"{record.filePath}:{record.lineNumber}"  # (Markdown: a link's text, on one line)
    if format == "markdown":
        out = [
            f"# {markdown.text(record.errorClass)}: {markdown.text(record.slug)}",
            "",
            *markdown.fence(record.errorMessage),
            "",
            f"Thrown at {markdown.link(where, record.githubUrl)} in {markdown.inline_code(line.extraction.function)}, "
            f"{condition_in_words(line, code=markdown.inline_code)}.",
        ]
        if explanation.history:
            out += ["", f"Releases: {markdown.text(explanation.history)}."]
        if explanation.values:
            out += ["", "| placeholder | value |", "| --- | --- |"]
            out += [f"| {markdown.code(k)} | {markdown.code(v)} |" for k, v in explanation.values.items()]
        if resolved:
            out += [
                "",
                "## Fields",
                "",
                "| field | set with | default | constraints | meaning |",
                "| --- | --- | --- | --- | --- |",
            ]
            for f in resolved:
                cells = [
                    markdown.code(f"{f.class_}.{f.field}"),
                    _how_set(f, cell=markdown.text, code=markdown.code),
                    markdown.code(f.default) if f.default else "",
                    ", ".join(markdown.code(c) for c in f.constraints),
                    _prose(_first_sentence(f.doc)),
                ]
                out.append("| " + " | ".join(cells) + " |")
        if unresolved:
            out += ["", "Also read:", ""]
            out += [f"- {markdown.inline_code(f.expression)}: {markdown.text(f.reason or '')}" for f in unresolved]
        out += _reproduction_markdown(line)
        out += _fixes_markdown(explanation.fixes)
        if explanation.related:
            out += ["", "## Related errors", ""]
            out += [
                f"- {markdown.link(f'{r.record.filePath}:{r.record.lineNumber}', r.record.githubUrl)} "
                f"{markdown.text(_short(r, 100))}"
                for r in explanation.related
            ]
        return "\n".join(out) + "\n"
    out = [
        f"{record.errorClass}: {record.errorMessage}",
        "",
        f"Thrown at  {one_line(where, limit=None)}  ({line.extraction.function})",  # (a line break in a name: \\n)
        f"           {record.githubUrl}",
        f"When       {_when(line) or 'whenever this code runs'}",
    ]
    if explanation.history:
        out += [f"Releases   {explanation.history}"]
    if explanation.values:
        out += ["Values     " + ", ".join(f"{' '.join(k.split())} = {v}" for k, v in explanation.values.items())]
    if resolved:
        out += ["", "Fields"]
        for f in resolved:
            out.append(
                f"  {f.class_}.{f.field}: {f.annotation} = {f.default}"
                + (f"  [{', '.join(f.constraints)}]" if f.constraints else "")
            )
            out.append(f"      set with: {_how_set(f)}")
            if f.doc:
                out.append(f"      {_first_sentence(f.doc)}")
    if unresolved:
        out += ["", "Also read"] + [f"  {f.expression}: {f.reason}" for f in unresolved]
    out += _reproduction_text(line)
    out += _fixes_text(explanation.fixes)
    if explanation.related:
        out += ["", "Related errors"]
        out += [
            f"  {one_line(f'{r.record.filePath}:{r.record.lineNumber}', limit=None)}  {_short(r, 90)}"
            for r in explanation.related
        ]
    return "\n".join(out) + "\n"
