"""The static site: pages, links, analysis overlay, atomic rebuilds, the nightly's site and analysis; a real browser."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from extractor.catalog.load import load_catalog
from extractor.cli.main import main
from extractor.model.records import CatalogLine, replace
from extractor.query.analysis import AnalysisEntry, basis, carry_forward
from extractor.query.match.matcher import Matcher
from tests.conftest import GitRepo, cli, git

CONFIG_V1 = '''\
from dataclasses import dataclass


@dataclass
class SchedulerConfig:
    max_num_seqs: int = 128
    """Maximum number of sequences per iteration."""
    max_len: int = 2048
    """Longest sequence, in tokens."""

    def __post_init__(self):
        if self.max_num_seqs < 1:
            raise ValueError(f"max_num_seqs ({self.max_num_seqs}) must be at least 1.")
        if self.max_len < self.max_num_seqs:
            raise ValueError(
                "max_len is smaller than max_num_seqs: "
                f"{self.max_len} < {self.max_num_seqs}."
            )
        if self.max_len > 1 << 20:
            raise TypeError("max_len <b>is</b> too \\"large\\" & unsafe</script><!--")
'''
OTHER_V1 = """\
def load(path):
    if not path:
        raise RuntimeError("no path given to the loader")
    raise ValueError(f"cannot load {path!r}")
"""
# v2: one message reworded, one check's condition changed (modified), one removed, one added.
CONFIG_V2 = (
    CONFIG_V1.replace("must be at least 1.", "must be one or more.")
    .replace("1 << 20", "1 << 21")
    .replace(
        "    def __post_init__(self):\n",
        "    def __post_init__(self):\n        if self.max_num_seqs > 4096:\n"
        '            raise ValueError("max_num_seqs is over the hard limit of 4096")\n',
    )
)
OTHER_V2 = OTHER_V1.replace('    if not path:\n        raise RuntimeError("no path given to the loader")\n', "")
SCOPE = ["--exception", "*"]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A nightly root that published v1 then v2 (with a diff), and each version's catalog."""
    base = tmp_path_factory.mktemp("site")
    repo = GitRepo(base / "repo")
    repo.commit({"vllm/config/scheduler.py": CONFIG_V1, "vllm/config/other.py": OTHER_V1}, tag="v1")
    repo.commit({"vllm/config/scheduler.py": CONFIG_V2, "vllm/config/other.py": OTHER_V2}, tag="v2")
    bare = base / "bare.git"
    git(base, "clone", "--quiet", "--bare", str(repo.path), str(bare))
    root = base / "pub"
    shas = {}
    for tag in ("v1", "v2"):
        git(bare, "update-ref", "refs/heads/main", f"refs/tags/{tag}")
        shas[tag] = git(bare, "rev-parse", "refs/heads/main")
        assert main(["nightly", "--repo", str(bare), "--output", str(root), "--quiet", *SCOPE]) == 0
    return {"root": root, "bare": bare, "v1": folder(root, shas["v1"]), "v2": folder(root, shas["v2"]), "shas": shas}


def folder(root: Path, sha: str) -> Path:
    """The folder the nightly job published a catalog of `sha` in (named after its scope, `SCOPE` here)."""
    (found,) = root.glob(f"{sha}-*")
    return found


def lines_of(directory: Path) -> list[CatalogLine]:
    return list(load_catalog(directory).lines)


def by_message(lines: list[CatalogLine], words: str) -> CatalogLine:
    return next(line for line in lines if words in line.record.errorMessage)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("a", "link", "script") and (values.get("href") or values.get("src")):
            self.links.append(values.get("href") or values.get("src") or "")
        if values.get("id"):
            self.ids.add(values["id"] or "")


def local_links(page: Path) -> list[str]:
    parser = _Links()
    parser.feed(page.read_text())
    return [link for link in parser.links if not urlsplit(link).scheme]


def crawl(site: Path) -> set[Path]:
    """Follow every local link from the index; fail on any that leads nowhere. Return the pages reached."""
    seen: set[Path] = set()
    todo = [site / "index.html"]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for link in local_links(page):
            path = unquote(urlsplit(link).path)
            target = (page.parent / path).resolve() if path else page
            assert target.is_file(), f"{page.relative_to(site)} links to {link}, which does not exist"
            if target.suffix == ".html":
                todo.append(target)
    return seen


def build(*args: str) -> None:
    result = cli("site", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_a_page_per_record_at_its_id_linked_from_the_index(published: dict[str, Any], tmp_path: Path) -> None:
    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--output", str(site))
    ids = {line.record.id for line in lines_of(published["v1"])}
    assert {p.stem for p in (site / "errors").glob("*.html")} == ids
    every = (site / "all.html").read_text()
    assert re.findall(r'href="errors/([0-9a-f]{16})\.html"', every) == [
        line.record.id for line in lines_of(published["v1"])
    ]
    data = re.search(
        r'<script id="search-data" type="application/json">(.*?)</script>', (site / "index.html").read_text()
    )
    assert data is not None
    assert [row[0] for row in json.loads(data.group(1))["rows"]] == [
        line.record.id for line in lines_of(published["v1"])
    ]
    pages = crawl(site)
    assert {p.stem for p in pages if p.parent.name == "errors"} == ids
    names = [".extractor-site", ".extractor-site-files", "all.html", "assets", "errors", "index.html"]
    assert sorted(p.name for p in site.iterdir()) == names


def test_record_page_marks_placeholders_escapes_text_and_marks_exactly_the_raise_lines(
    published: dict[str, Any], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--output", str(site))
    lines = lines_of(published["v1"])
    smaller = by_message(lines, "is smaller than")
    page = (site / "errors" / f"{smaller.record.id}.html").read_text()
    assert (
        "max_len is smaller than max_num_seqs: "
        '<mark class="ph" data-p="0">{self.max_len}</mark> &lt; <mark class="ph" data-p="1">{self.max_num_seqs}</mark>.'
    ) in page
    raise_lines = [int(n) for n in re.findall(r'class="line raise" data-n="(\d+)"', page)]
    assert raise_lines == list(range(smaller.record.lineNumber, smaller.extraction.endLineNumber + 1))
    assert len(raise_lines) == 4  # a raise written over four lines is marked whole
    numbers = [int(n) for n in re.findall(r'data-n="(\d+)"', page)]
    assert numbers == list(range(smaller.record.sourceCodeStart, smaller.record.sourceCodeEnd + 1))
    assert f'href="{smaller.record.githubUrl}"' in page
    assert (
        "raised when <code>self.max_len &lt; self.max_num_seqs</code> in <code>SchedulerConfig.__post_init__</code>"
    ) in page
    assert "<code>SchedulerConfig.max_len</code>" in page and "Longest sequence, in tokens." in page
    related = re.findall(r'<li><a href="([0-9a-f]{16})\.html">', page)
    assert related == [i for i in smaller.extraction.related]
    assert related  # the other checks of __post_init__

    unsafe = by_message(lines, "unsafe")
    page = (site / "errors" / f"{unsafe.record.id}.html").read_text()
    assert '<code>max_len &lt;b&gt;is&lt;/b&gt; too "large" &amp; unsafe&lt;/script&gt;&lt;!--</code>' in page
    assert "<b>is</b>" not in page
    # Source is highlighted with Pygments' classes, whose rules are in the stylesheet.
    assert '<span class="k">raise</span> <span class="ne">TypeError</span>' in page
    css = (site / "assets" / "site.css").read_text()
    assert ".code .k {" in css and ".code .ne {" in css


def test_analysis_overlay_shows_current_analysis_only(published: dict[str, Any], tmp_path: Path) -> None:
    lines = lines_of(published["v1"])
    loader, smaller = by_message(lines, "no path given"), by_message(lines, "is smaller than")
    unsafe = by_message(lines, "unsafe")
    record = replace(
        smaller.record, documentation="Raised when **max_len** is short.", solutions=["Raise `--max-len`."]
    )
    analysis = tmp_path / "analysis.jsonl"
    analysis.write_text(
        json.dumps({"id": loader.record.id, "documentation": "The loader needs a <path>.", "tags": ["io"]})
        + "\n"
        + json.dumps(replace(smaller, record=record).model_dump(mode="json"))
        + "\n"
        + json.dumps({"id": unsafe.record.id, "errorMessage": "an older wording", "documentation": "STALE TEXT"})
        + "\n"
    )
    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--analysis", str(analysis), "--output", str(site))
    page = (site / "errors" / f"{loader.record.id}.html").read_text()
    assert "<p>The loader needs a &lt;path&gt;.</p>" in page
    assert '<span class="tag">io</span>' in page
    assert "raised when" not in page  # the analysis' documentation replaces our own words
    page = (site / "errors" / f"{smaller.record.id}.html").read_text()
    assert "<p>Raised when <strong>max_len</strong> is short.</p>" in page
    assert "<li>Raise <code>--max-len</code>.</li>" in page
    page = (site / "errors" / f"{unsafe.record.id}.html").read_text()
    assert "STALE TEXT" not in page and "raised when" in page


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json\n", "analysis.jsonl:1: not JSON"),
        ('{"documentation": "x"}\n', "analysis.jsonl:1: not an analysis line: id: Field required"),
        ('{"id": "zz", "documentation": "x"}\n', "analysis.jsonl:1: not an analysis line: id: String should match"),
    ],
)
def test_bad_analysis_is_one_error_line_and_nothing_written(
    published: dict[str, Any], tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "analysis.jsonl").write_text(content)
    result = cli(
        "site", "--catalog", str(published["v1"]), "--analysis", str(tmp_path / "analysis.jsonl"), "--output",
        str(tmp_path / "site"),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("extractor: error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "site").exists()


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_pages_shared_among_worker_processes_are_the_pages_one_process_renders(
    published: dict[str, Any], tmp_path: Path
) -> None:
    """Forked workers take whole files each and write their pages themselves: the site is the same, byte for byte."""
    from extractor.publish.site.build import build_site
    from extractor.publish.site.pages import BUILT, render_site

    inputs = open_site_inputs_of(published["root"])
    alone = build_site(inputs.catalog, output=tmp_path / "one", diffs=inputs.diffs, workers=1)
    shared = build_site(inputs.catalog, output=tmp_path / "three", diffs=inputs.diffs, workers=3)
    rendered = render_site(inputs.catalog, diffs=inputs.diffs)
    assert tree(tmp_path / "three") == tree(tmp_path / "one") == {**rendered, BUILT: _listing(rendered)}
    assert shared == alone
    # A page per record, the index, all.html, a diff, site.css, search.js, find.js, find_constants.js, record.js,
    # paste.js, the marker.
    assert (alone.records, alone.diffs, alone.files) == (len(inputs.catalog.lines), 1, len(inputs.catalog.lines) + 10)
    assert alone.bytes == sum(len(data) for name, data in tree(tmp_path / "one").items() if name != BUILT)


def _listing(files: dict[str, bytes]) -> bytes:
    """What a site lists as its build's files (see BUILT)."""
    return "".join(f"{name}\n" for name in sorted(files)).encode()


def open_site_inputs_of(root: Path) -> Any:
    from extractor.pipeline.extract import ExtractOptions
    from extractor.publish.site.inputs import open_site_inputs

    return open_site_inputs(str(root), repo=str(root), options=ExtractOptions(exceptions=("*",)))


def test_highlighting_gives_a_line_of_html_per_line_the_same_when_its_tokens_were_met_before() -> None:
    from extractor.publish.site.highlight import highlight

    text = 'x = """a <b>\n\nc"""  # & done\nif x:\n    raise ValueError(x)\n'
    expected = [
        'x <span class="o">=</span> <span class="sd">"""a &lt;b&gt;</span>',
        "",
        '<span class="sd">c"""</span>  <span class="c1"># &amp; done</span>',
        '<span class="k">if</span> x:',
        '    <span class="k">raise</span> <span class="ne">ValueError</span>(x)',
        "",
    ]
    fragments: dict[Any, dict[str, str]] = {}  # (a Highlighter's: the HTML of the tokens it met)
    assert highlight("m.py", text, fragments) == expected
    assert fragments and highlight("other.py", text, fragments) == expected  # now from the HTML of the tokens met
    assert highlight("m.py", text) == expected  # (with no memo of its own)
    assert highlight("notes.txt", "a<\n\nb") == ["a&lt;", "", "b"]


def test_an_output_that_is_not_a_site_is_never_replaced(published: dict[str, Any], tmp_path: Path) -> None:
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("mine")
    result = cli("site", "--catalog", str(published["v1"]), "--output", str(precious))
    assert result.returncode == 2
    assert (
        result.stderr == f"extractor: error: {precious} exists and is not a site built by extractor: not replacing it "
        "(name another folder with --output)\n"
    )
    assert [p.name for p in precious.iterdir()] == ["notes.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["home"]  # no staging directory left behind


@pytest.mark.parametrize("failing", ["moving the old site away", "moving the new one in"])
def test_a_swap_that_fails_leaves_the_old_site_and_nothing_beside_it(
    published: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """A rename the system refuses (an immutable folder, a full disk's metadata): the old site stays where
    it was, whole, and neither the new one nor the folder the old one was to be moved into is left."""
    import extractor.publish.site.build

    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--output", str(site))
    before = sorted(str(p.relative_to(site)) for p in site.rglob("*"))
    real = os.replace
    refused: list[Any] = []

    def refusing(source: Any, target: Any) -> None:  # the first such rename only
        moving_old = Path(source) == site and failing == "moving the old site away"
        if not refused and (moving_old or (Path(target) == site and failing == "moving the new one in")):
            refused.append(source)
            raise PermissionError(1, "Operation not permitted", str(source))
        real(source, target)

    monkeypatch.setattr(extractor.publish.site.build.os, "replace", refusing)
    monkeypatch.setattr(extractor.publish.site.build, "_exchanged", lambda new, old: False)  # (two renames)
    result = cli("site", "--catalog", str(published["v2"]), "--output", str(site))
    monkeypatch.setattr(extractor.publish.site.build.os, "replace", real)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert sorted(str(p.relative_to(site)) for p in site.rglob("*")) == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"] and refused


def test_a_site_link_switched_to_a_new_build_never_removes_a_folder_of_the_users(
    published: dict[str, Any], tmp_path: Path
) -> None:
    """An --output that is a symlink to a site is switched to the new build; the folder it pointed at is
    removed only if this code made it for the link (a staging folder beside it). A site the user pointed
    it at stays, and a link to the folder that holds it (`self -> .`) removes nothing, not the new site."""
    mine = tmp_path / "elsewhere" / "A"
    build("--catalog", str(published["v1"]), "--output", str(mine))
    (tmp_path / "link").symlink_to(mine)
    build("--catalog", str(published["v2"]), "--output", str(tmp_path / "link"))
    assert (mine / ".extractor-site").exists() and (tmp_path / "link" / ".extractor-site").exists()
    build("--catalog", str(published["v1"]), "--output", str(tmp_path / "link"))  # its own build: replaced
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".link.")] == [(tmp_path / "link").resolve().name]

    home = tmp_path / "home"
    build("--catalog", str(published["v1"]), "--output", str(home))
    (home / "NOTES.txt").write_text("important")
    (home / "self").symlink_to(".")
    build("--catalog", str(published["v2"]), "--output", str(home / "self"))
    assert (home / "NOTES.txt").read_text() == "important"
    assert ((home / "self") / ".extractor-site").exists()


def test_a_record_page_links_only_a_web_address(published: dict[str, Any], tmp_path: Path) -> None:
    """A doctored catalog's `javascript:` githubUrl would run script when its link is clicked: no link."""
    lines = (published["v1"] / "records.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["record"]["githubUrl"] = "javascript:alert(1)"
    (tmp_path / "records.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    build("--catalog", str(tmp_path / "records.jsonl"), "--output", str(tmp_path / "site"))
    page = (tmp_path / "site" / "errors" / f"{first['record']['id']}.html").read_text()
    assert "javascript:" not in page and 'class="pinned"' not in page
    other = json.loads(lines[1])["record"]
    assert f'href="{other["githubUrl"]}"' in (tmp_path / "site" / "errors" / f"{other['id']}.html").read_text()


def test_a_rebuild_keeps_what_a_person_put_in_the_site(published: dict[str, Any], tmp_path: Path) -> None:
    """A CNAME, the `.git` of a pages branch, notes among the pages, the catalog itself: whatever the build
    did not make stays, in the new site, while a page of the old build the new one does not make goes."""
    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--output", str(site))
    (site / "CNAME").write_text("errors.example.org\n")
    (site / ".git").mkdir()
    (site / ".git" / "HEAD").write_text("ref: refs/heads/gh-pages\n")
    (site / "errors" / "NOTES.md").write_text("mine")
    shutil.copytree(published["v1"], site / "catalog")
    stale = next((site / "errors").glob("*.html"))
    listed = (site / ".extractor-site-files").read_text().splitlines()
    (site / ".extractor-site-files").write_text(
        "".join(f"{n}\n" for n in listed if n != "errors/gone.html") + "errors/gone.html\n"
    )
    (site / "errors" / "gone.html").write_text("a page the old build made")
    build("--catalog", str(site / "catalog"), "--output", str(site))
    assert (site / "CNAME").read_text() == "errors.example.org\n" and (site / ".git" / "HEAD").exists()
    assert (site / "errors" / "NOTES.md").read_text() == "mine" and (site / "catalog" / "records.jsonl").exists()
    assert stale.exists() and not (site / "errors" / "gone.html").exists()
    assert "CNAME" not in (site / ".extractor-site-files").read_text().splitlines()


def test_rebuild_swaps_the_whole_site_and_keeps_each_live_id_at_its_address(
    published: dict[str, Any], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--output", str(site))
    old = {p.name for p in (site / "errors").iterdir()}
    build("--catalog", str(published["v2"]), "--output", str(site))
    new = {p.name for p in (site / "errors").iterdir()}
    v1 = {line.record.id for line in lines_of(published["v1"])}
    v2 = {line.record.id for line in lines_of(published["v2"])}
    assert new == {f"{i}.html" for i in v2}
    assert old & new == {f"{i}.html" for i in v1 & v2}
    assert len(v1 & v2) == 3  # the ids that live on (the modified check among them) keep their pages
    assert [p.name for p in tmp_path.iterdir()] == ["site"]


def test_nightly_root_gives_the_latest_catalog_and_a_page_per_published_diff(
    published: dict[str, Any], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build("--catalog", str(published["root"]), "--output", str(site))
    v2 = published["shas"]["v2"]
    assert [p.name for p in (site / "diffs").iterdir()] == [f"{v2}.html"]
    index = (site / "index.html").read_text()
    assert f'href="diffs/{v2}.html"' in index
    # The two checks whose lines shifted within their function are unchanged, not moved.
    assert "1 added, 1 removed, 1 reworded, 1 modified" in index
    page = (site / "diffs" / f"{v2}.html").read_text()
    lines = lines_of(published["v2"])
    reworded, added = by_message(lines, "one or more"), by_message(lines, "hard limit")
    assert f'<a href="../errors/{reworded.record.id}.html">' in page
    assert f'<a href="../errors/{added.record.id}.html">' in page
    assert "must be <del>at least 1.</del>" in page and "must be <ins>one or more.</ins>" in page
    assert "was vllm/config/scheduler.py:20; changed: lineNumber, conditions" in page
    removed = re.search(r'id="removed-title">Removed \((\d+)\)</h2>(.*?)</section>', page, re.S)
    assert removed is not None and removed.group(1) == "1" and "href" not in removed.group(2)
    assert len(crawl(site)) == 2 + len(lines) + 1


def test_analysis_is_carried_forward_by_id_and_wording_and_needs_are_listed(tmp_path: Path) -> None:
    """carry_forward keeps analysis whose id and wording hold; lists new, reworded and modified records."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"vllm/config/scheduler.py": CONFIG_V1, "vllm/config/other.py": OTHER_V1}, tag="v1")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "--quiet", "--bare", str(repo.path), str(bare))
    git(bare, "update-ref", "refs/heads/main", "refs/tags/v1")
    root = tmp_path / "pub"
    assert main(["nightly", "--repo", str(bare), "--output", str(root), "--quiet", *SCOPE]) == 0
    first = folder(root, git(bare, "rev-parse", "refs/heads/main"))
    needs = [json.loads(line) for line in (first / "needs-analysis.jsonl").read_text().splitlines()]
    v1 = lines_of(first)
    assert [(n["id"], n["reason"]) for n in needs] == [(line.record.id, "new") for line in v1]
    assert (first / "analysis.jsonl").read_text() == ""

    analysis = tmp_path / "fresh.jsonl"
    analysis.write_text(
        "".join(json.dumps({"id": n["id"], "documentation": f"doc of {n['slug']}"}) + "\n" for n in needs)
    )
    assert (
        main(["nightly", "--repo", str(bare), "--output", str(root), "--quiet", *SCOPE, "--analysis", str(analysis)])
        == 0
    )
    assert (first / "needs-analysis.jsonl").read_text() == ""
    stored = [json.loads(line) for line in (first / "analysis.jsonl").read_text().splitlines()]
    assert sorted(s["id"] for s in stored) == sorted(line.record.id for line in v1)
    assert all(set(s) == {"id", "errorMessage", "basis", "documentation"} for s in stored)

    repo.commit({"vllm/config/scheduler.py": CONFIG_V2, "vllm/config/other.py": OTHER_V2}, tag="v2")
    git(bare, "fetch", "--quiet", str(repo.path), "refs/tags/v2:refs/tags/v2")
    git(bare, "update-ref", "refs/heads/main", "refs/tags/v2")
    assert main(["nightly", "--repo", str(bare), "--output", str(root), "--quiet", *SCOPE, "--site"]) == 0
    second = folder(root, git(bare, "rev-parse", "refs/heads/main"))
    v2 = lines_of(second)
    needs = [json.loads(line) for line in (second / "needs-analysis.jsonl").read_text().splitlines()]
    reasons = {n["id"]: n["reason"] for n in needs}
    assert reasons == {
        by_message(v2, "hard limit").record.id: "new",
        by_message(v2, "one or more").record.id: "reworded",
        by_message(v2, "unsafe").record.id: "modified",
    }
    kept = {json.loads(line)["id"] for line in (second / "analysis.jsonl").read_text().splitlines()}
    v1_ids = {line.record.id for line in v1}
    assert kept == {line.record.id for line in v2} & v1_ids  # the modified check keeps its analysis too
    # The site shows the carried analysis on the pages of the records it still speaks of.
    site = root / "site"
    assert site.is_symlink()
    loader = by_message(v2, "cannot load")
    assert f"doc of {loader.record.slug}" in (site / "errors" / f"{loader.record.id}.html").read_text()
    assert "doc of" not in (site / "errors" / f"{by_message(v2, 'one or more').record.id}.html").read_text()


def test_basis_ignores_location_and_sees_conditions(published: dict[str, Any]) -> None:
    """An analysis rests on what a check says and when it runs, not on where it sits."""
    line = by_message(lines_of(published["v1"]), "is smaller than")
    moved = replace(line, record=replace(line.record, lineNumber=line.record.lineNumber + 7, filePath="x/y.py"))
    assert basis(moved) == basis(line)
    condition = line.extraction.conditions[0]
    modified = replace(line, extraction=replace(line.extraction, conditions=[replace(condition, test="other")]))
    assert basis(modified) != basis(line)
    entry = AnalysisEntry(id=line.record.id, documentation="d")
    carried = carry_forward({line.record.id: entry}, [modified])
    assert [(e.id, e.basis, e.errorMessage) for e in carried.entries] == [
        (line.record.id, basis(modified), line.record.errorMessage)
    ]
    assert carried.needs == ()
    reworded = replace(line, record=replace(line.record, errorMessage="other words"))
    carried = carry_forward({line.record.id: entry.model_copy(update={"errorMessage": "x"})}, [reworded])
    assert carried.entries == () and [n.reason.value for n in carried.needs] == ["new"]


def test_nightly_site_is_switched_atomically_and_left_alone_when_current(
    published: dict[str, Any], tmp_path: Path
) -> None:
    root = tmp_path / "pub"
    shutil.copytree(published["root"], root, symlinks=True)
    assert main(["nightly", "--repo", str(published["bare"]), "--output", str(root), "--quiet", *SCOPE, "--site"]) == 0
    site = root / "site"
    target = os.readlink(site)
    assert target.startswith(".site.") and (root / target / "index.html").exists()
    reworded = by_message(lines_of(published["v2"]), "one or more")  # its page tells its history
    page = (site / "errors" / f"{reworded.record.id}.html").read_text()
    assert f"reworded</span> in <code>{published['shas']['v2'][:12]}</code>" in page
    before = (root / target / "index.html").stat().st_mtime_ns
    assert main(["nightly", "--repo", str(published["bare"]), "--output", str(root), "--quiet", *SCOPE, "--site"]) == 0
    assert os.readlink(site) == target and (root / target / "index.html").stat().st_mtime_ns == before
    (site / ".extractor-site").write_text('{"sha": "0000000"}')  # as if built from an older catalog
    assert main(["nightly", "--repo", str(published["bare"]), "--output", str(root), "--quiet", *SCOPE, "--site"]) == 0
    assert os.readlink(site) != target and not (root / target).exists()
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".site")) == [os.readlink(site)]


# In a real browser ----------------------------------------------------------------------------------------

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    return os.environ.get("EXTRACTOR_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip extra 'test')")
    path = chromium_path()
    if path is None:
        pytest.skip("no chromium on PATH: .ci/run installs Debian's chromium package")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def site(published: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "site"
    build("--catalog", str(published["root"]), "--output", str(out))
    return out


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.errors = []
    page.on("console", lambda message: page.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    page.close()


KEYSTROKE = """async (text) => {
  const box = document.getElementById('q'), start = performance.now();
  box.value = text;
  box.dispatchEvent(new Event('input', {bubbles: true}));
  await new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)));
  return [performance.now() - start, document.getElementById('count').textContent];
}"""


def visible_rows(page: Any) -> list[str]:
    return list(page.eval_on_selector_all("#results li:not([hidden])", "items => items.map(i => i.textContent)"))


def test_browser_typing_filters_the_index_and_the_url_keeps_the_query(
    browser: Any, page: Any, site: Path, published: dict[str, Any], record_property: Any
) -> None:
    page.goto((site / "index.html").as_uri())
    # Timings are reported (junit properties), not asserted: scripts/bench_site.py measures them at scale.
    record_property(
        "interactive_ms", page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    )
    record_property("keystroke_ms", page.evaluate(KEYSTROKE, "max")[0])
    page.fill("#q", "")
    assert len(visible_rows(page)) == 5
    page.fill("#q", "max_len")
    rows = visible_rows(page)
    assert len(rows) == 2 and all("max_len" in row for row in rows)
    assert page.text_content("#count") == "2 of 5"
    page.type("#q", " UNSAFE")  # every word must match, in any case
    assert len(visible_rows(page)) == 1
    assert "q=max_len+UNSAFE" in page.url
    page.fill("#q", "--max-num-seqs")  # a flag name
    assert visible_rows(page) == []
    assert page.is_visible("#empty")
    # The id, file and class of a row are searched too (the page holds them once, beside the searched text).
    lines = lines_of(published["v2"])
    loader = by_message(lines, "cannot load")
    for query, expected in [
        (loader.record.id, [loader]),
        ("CONFIG/other.py", [line for line in lines if line.record.filePath.endswith("other.py")]),
        ("typeerror max_len", [by_message(lines, "unsafe")]),
        ("valueerror scheduler.py hard", [by_message(lines, "hard limit")]),
    ]:
        page.fill("#q", query)
        assert page.eval_on_selector_all("#results a", "links => links.map(a => a.getAttribute('href'))") == [
            f"errors/{line.record.id}.html" for line in expected
        ], query
    page.fill("#q", "")
    chosen = "s => [...s.options].find(o => o.text.startsWith('TypeError ')).value"  # (by its index)
    page.select_option("#f-class", page.eval_on_selector("#f-class", chosen))
    assert [row.split()[0] for row in visible_rows(page)] == ["TypeError"]
    shared = page.url
    assert "class=TypeError" in shared
    other = browser.new_page()
    other.goto(shared)
    shown = other.eval_on_selector("#f-class", "s => s.options[s.selectedIndex].text")
    assert shown.startswith("TypeError ") and len(visible_rows(other)) == 1
    other.close()
    assert page.errors == []


def test_browser_keyboard_moves_from_the_search_box_through_the_list(page: Any, site: Path) -> None:
    page.goto((site / "index.html").as_uri())
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("ValueError")
    page.keyboard.press("ArrowDown")
    hrefs = page.eval_on_selector_all("#results li:not([hidden]) a", "links => links.map(a => a.getAttribute('href'))")
    assert page.evaluate("document.activeElement.getAttribute('href')") == hrefs[0]
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.getAttribute('href')") == hrefs[1]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.press("ArrowDown")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(hrefs[0])


def test_browser_click_through_to_a_record_with_its_raise_line_marked(
    page: Any, site: Path, published: dict[str, Any]
) -> None:
    line = by_message(lines_of(published["v2"]), "cannot load")
    page.goto((site / "index.html").as_uri())
    page.fill("#q", "cannot load")
    page.click("#results li:not([hidden]) a")
    page.wait_for_load_state()
    assert page.url.endswith(f"errors/{line.record.id}.html")
    assert page.text_content("h1") == f"ValueError: {line.record.errorMessage}"  # (the message, not the slug)
    marked = page.eval_on_selector_all(".code .line.raise", "lines => lines.map(l => l.dataset.n)")
    assert marked == [str(line.record.lineNumber)]
    color = page.eval_on_selector(".code .line.raise", "l => getComputedStyle(l).backgroundColor")
    assert color != page.eval_on_selector(".code .line:not(.raise)", "l => getComputedStyle(l).backgroundColor")
    assert page.errors == []


def test_browser_crawl_finds_every_page_without_a_404_or_a_console_error(page: Any, site: Path) -> None:
    seen: set[str] = set()
    todo = [(site / "index.html").as_uri()]
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        seen.add(url)
        response = page.goto(url)
        assert response is not None and response.ok, url
        for href in page.eval_on_selector_all(
            "a[href], link[href], script[src]", "els => els.map(e => e.href || e.src)"
        ):
            parts = urlsplit(href)
            if parts.scheme == "file":
                target = Path(unquote(parts.path))
                assert target.is_file(), f"{url} links to {href}"
                if target.suffix == ".html":
                    todo.append(target.as_uri())
            else:
                assert parts.scheme == "https" and parts.netloc == "github.com", href
    assert len(seen) == 2 + len(list((site / "errors").iterdir())) + 1
    assert page.errors == []


@pytest.mark.parametrize("width", [390, 1280])
def test_browser_pages_fit_the_width_of_a_phone_and_a_desktop(browser: Any, site: Path, width: int) -> None:
    page = browser.new_page(viewport={"width": width, "height": 800})
    for path in [site / "index.html", next((site / "errors").iterdir()), next((site / "diffs").iterdir())]:
        page.goto(path.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path.name
        box = page.query_selector("h1").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    page.close()


def axe_script() -> Path | None:
    for candidate in [
        os.environ.get("EXTRACTOR_AXE"),
        Path(__file__).parents[1] / ".ci-node/node_modules/axe-core/axe.min.js",
    ]:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def test_browser_axe_finds_no_wcag_aa_violation(page: Any, site: Path) -> None:
    script = axe_script()
    if script is None:
        pytest.skip("axe-core not found: .ci/run installs it from npm into .ci-node/ (or set EXTRACTOR_AXE)")
    for path in [site / "index.html", *sorted((site / "errors").iterdir())[:3], next((site / "diffs").iterdir())]:
        page.goto(path.as_uri())
        page.add_script_tag(path=str(script))
        result = page.evaluate(
            "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}})"
        )
        violations = [(v["id"], [n["target"] for n in v["nodes"]][:3]) for v in result["violations"]]
        assert violations == [], path.name


def test_browser_lists_a_page_of_matches_at_a_time(browser: Any, published: dict[str, Any], tmp_path: Path) -> None:
    """Only a page of rows is in the DOM; the rest come with 'Show more' or by walking the list with the keys."""
    from extractor.catalog.load import LoadedCatalog
    from extractor.publish.site.build import write_site
    from extractor.publish.site.pages import render_site

    line = by_message(lines_of(published["v1"]), "cannot load")
    many = tuple(
        replace(line, record=replace(line.record, id=f"{n:016x}", slug=f"s{n}"), extraction=line.extraction)
        for n in range(250)
    )
    write_site(render_site(LoadedCatalog(many, None, line.record.analyzedSha, "many")), tmp_path / "site")
    page = browser.new_page()
    page.goto((tmp_path / "site" / "index.html").as_uri())
    assert len(visible_rows(page)) == 100
    assert page.text_content("#more") == "Show 150 more of 150"
    page.click("#more")
    assert len(visible_rows(page)) == 250 and page.is_hidden("#more-line")
    page.fill("#q", "load")
    assert len(visible_rows(page)) == 100
    page.focus("#results li:nth-child(100) a")
    page.keyboard.press("ArrowDown")
    assert len(visible_rows(page)) == 200
    assert page.evaluate("document.activeElement.getAttribute('href')") == f"errors/{100:016x}.html"
    page.close()


@pytest.fixture(scope="module")
def history_run(published: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `history` writes of the published repository's tags v1 and v2."""
    history = tmp_path_factory.mktemp("history") / "history"
    assert main(["history", "v*", "--repo", str(published["bare"]), "--output", str(history), "--quiet", *SCOPE]) == 0
    return history


def test_history_shows_each_records_lineage(published: dict[str, Any], history_run: Path, tmp_path: Path) -> None:
    """--history (what `history` wrote; dates from history.json beside it) puts each record's events on its page."""
    history = history_run
    dates = {r["revision"]: r["committedAt"] for r in json.loads((history / "history.json").read_text())["revisions"]}
    new = by_message(lines_of(published["v2"]), "one or more")
    site = tmp_path / "site"
    for given in (history / "history.jsonl", history):  # the file, or the directory holding it
        build("--catalog", str(published["v2"]), "--history", str(given), "--output", str(site))
        page = (site / "errors" / f"{new.record.id}.html").read_text()
        found = re.search(r'class="history">(.*?)</ol>', page, re.S)
        assert found is not None
        assert re.findall(r'<li><span class="kind">(.*?)</li>', found[1]) == [
            f"present</span> in <code>v1</code> ({dates['v1']}): the first revision followed",
            f"reworded</span> in <code>v2</code> ({dates['v2']}): was “max_num_seqs ({{self.max_num_seqs}}) must be at"
            " least 1.”",
        ]
    modified = by_message(lines_of(published["v2"]), "unsafe")
    page = (site / "errors" / f"{modified.record.id}.html").read_text()
    assert f"modified</span> in <code>v2</code> ({dates['v2']}): changed: conditions" in page
    added = by_message(lines_of(published["v2"]), "hard limit")
    assert (
        f"introduced</span> in <code>v2</code> ({dates['v2']})</li>"
        in (site / "errors" / f"{added.record.id}.html").read_text()
    )
    # Without --history, a catalog the nightly job published shows the rolling history beside its index.
    build("--catalog", str(published["v2"]), "--output", str(site))
    page = (site / "errors" / f"{new.record.id}.html").read_text()
    assert f"reworded</span> in <code>{published['shas']['v2'][:12]}</code>" in page
    alone = shutil.copytree(published["v2"], tmp_path / "alone")  # and a catalog on its own, none
    build("--catalog", str(alone), "--output", str(site))
    assert 'class="history"' not in (site / "errors" / f"{new.record.id}.html").read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"events": [{"kind": "introduced"}]}\n', "history.jsonl:1: not a history line: lineage: Field required"),
        ("{not json\n", "history.jsonl:1: not a history line: the document: Invalid JSON"),
        ('{"revisions": []}', "history.json: not a valid history manifest: repo: Field required"),
    ],
)
def test_a_history_that_is_not_what_history_writes_is_one_error_line(
    published: dict[str, Any], history_run: Path, tmp_path: Path, content: str, message: str
) -> None:
    history = shutil.copytree(history_run, tmp_path / "history")
    name = message.split(":")[0]
    (history / name).write_text(content)
    result = cli("site", "--catalog", str(published["v2"]), "--history", str(history / "history.jsonl"),
                     "--output", str(tmp_path / "site"))  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(f"extractor: error: {history / name}") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "site").exists()


def test_pinned_links_percent_encode_the_path_and_the_page_links_to_the_same(tmp_path: Path) -> None:
    """A path with a blank, '#', '%' or a non-ASCII letter still makes a pinned link that names that file."""
    repo = GitRepo(tmp_path / "repo")
    sha = repo.commit({"vllm/config/odd dir/a#1%é.py": 'def f(x):\n    raise ValueError("odd")\n'})
    assert main(["--repo", str(repo.path), "--sha", sha, "--output", str(tmp_path / "out"), "--quiet"]) == 0
    (catalog,) = (tmp_path / "out").iterdir()
    (line,) = lines_of(catalog)
    assert line.record.filePath == "vllm/config/odd dir/a#1%é.py"
    assert line.record.githubUrl == (
        f"https://github.com/vllm-project/vllm/blob/{sha}/vllm/config/odd%20dir/a%231%25%C3%A9.py#L1-L2"
    )
    build("--catalog", str(catalog), "--output", str(tmp_path / "site"))
    page = (tmp_path / "site" / "errors" / f"{line.record.id}.html").read_text()
    assert re.findall(r'class="pinned" href="([^"]*)"', page) == [line.record.githubUrl]


def test_every_reader_takes_a_nightly_root_for_its_latest_catalog(published: dict[str, Any], tmp_path: Path) -> None:
    """list, match, explain and diff read a nightly root as site does: its latest catalog."""
    root = str(published["root"])
    latest = str(published["v2"])
    listed = cli("list", "--catalog", root, "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout == cli("list", "--catalog", latest, "--format", "json").stdout
    text = "ValueError: " + by_message(lines_of(published["v2"]), "hard limit").record.errorMessage
    matched = cli("match", "--catalog", root, text, cwd=tmp_path)
    assert matched.returncode == 0 and matched.stdout == cli("match", "--catalog", latest, text).stdout
    assert cli("diff", root, latest, cwd=tmp_path).returncode == 0  # the same catalog: no difference


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"sourceCodeStart": -3}, id="a negative first line"),
        pytest.param({"sourceCode": ""}, id="no source code"),
        pytest.param({"sourceCodeEnd": 1000}, id="an end past its source code"),
    ],
)
def test_a_record_whose_window_disagrees_with_its_bounds_is_read_by_every_reader_and_shown_as_it_holds(
    published: dict[str, Any], tmp_path: Path, change: dict[str, Any]
) -> None:
    """The model ties neither a window's first line to 1 nor its text to its bounds: what match, explain and
    diff read, the site shows too, a line per line of its sourceCode numbered from its sourceCodeStart."""
    line = by_message(lines_of(published["v1"]), "is smaller than")
    data = line.model_dump(mode="json", by_alias=True)
    data["record"].update(change)
    catalog = tmp_path / "records.jsonl"  # alone, as `--output -` writes it: no manifest to seal it
    catalog.write_text(json.dumps(data) + "\n")
    site = tmp_path / "site"
    build("--catalog", str(catalog), "--output", str(site))
    page = (site / "errors" / f"{line.record.id}.html").read_text()
    record = CatalogLine.model_validate(data).record
    numbers = [int(n) for n in re.findall(r'data-n="(-?\d+)"', page)]
    assert numbers == list(range(record.sourceCodeStart, record.sourceCodeStart + len(record.sourceCode.split("\n"))))
    for reader in (
        ["explain", "--catalog", str(catalog), line.record.id],
        ["diff", str(catalog), str(catalog)],
        ["match", "--catalog", str(catalog), "ValueError: max_len is smaller than max_num_seqs: 1 < 2."],
    ):
        result = cli(*reader)
        assert result.returncode == 0 and result.stderr == "", (reader, result.stderr)


@pytest.mark.parametrize(
    ("kind", "side"), [("reworded", "old"), ("reworded", "new"), ("modified", "new"), ("added", "new")]
)
def test_a_published_diff_without_a_record_its_kind_shows_is_one_error_line_naming_it(
    published: dict[str, Any], tmp_path: Path, kind: str, side: str
) -> None:
    """A page shows both records of a reworded, moved or modified change, and the one of an added or
    removed change: diff.json without it is refused where it is read, naming the file and the change."""
    root = shutil.copytree(published["root"], tmp_path / "pub", symlinks=True)
    diff = folder(root, published["shas"]["v2"]) / "diff.json"
    document = json.loads(diff.read_text())
    (number,) = [i for i, change in enumerate(document["changes"]) if change["kind"] == kind]
    document["changes"][number][side] = None
    diff.write_text(json.dumps(document))
    result = cli("site", "--catalog", str(root), "--output", str(tmp_path / "site"))
    assert result.returncode == 2
    assert result.stderr == (
        f"extractor: error: {diff}: not a valid diff: changes.{number}: Value error, a {kind} change without its "
        f"{side} record\n"
    )
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize("name", ["index.json", "history.jsonl", "history.json", "analysis.jsonl", "diff.json"])
def test_a_file_the_site_reads_back_that_leads_nowhere_is_one_error_line_not_left_out(
    published: dict[str, Any], tmp_path: Path, name: str
) -> None:
    """A symlink that leads nowhere (here, round a loop) where a nightly root's index, history, or a catalog's
    analysis or diff goes is no missing file: the site would be built without what it holds, saying nothing."""
    root = shutil.copytree(published["root"], tmp_path / "pub", symlinks=True)
    place = root if name.startswith(("index", "history")) else folder(root, published["shas"]["v2"])
    (place / name).unlink()
    (place / name).symlink_to(name)
    result = cli("site", "--catalog", str(root), "--output", str(tmp_path / "site"))
    assert result.returncode == 2
    assert (
        result.stderr
        == f"extractor: error: cannot read {place / name}: it is a symlink to {name}, which leads nowhere\n"
    )
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize("alone", [False, True], ids=["a catalog folder", "its records.jsonl"])
def test_a_manifest_that_leads_nowhere_is_one_error_line_for_every_reader(
    published: dict[str, Any], tmp_path: Path, alone: bool
) -> None:
    """A manifest.json that is a symlink leading nowhere is no missing manifest: not a catalog whose run did
    not finish, nor records.jsonl alone, whose checksum there is then none to check."""
    catalog = shutil.copytree(published["v2"], tmp_path / "catalog")
    (catalog / "manifest.json").unlink()
    (catalog / "manifest.json").symlink_to("manifest.json")
    given = catalog / "records.jsonl" if alone else catalog
    manifest = catalog / "manifest.json"
    message = f"extractor: error: cannot read {manifest}: it is a symlink to manifest.json, which leads nowhere\n"
    for reader in (
        ["site", "--catalog", str(given), "--output", str(tmp_path / "site")],
        ["list", "--catalog", str(given)],
    ):
        result = cli(*reader)
        assert (result.returncode, result.stderr) == (2, message)
    assert not (tmp_path / "site").exists()


def test_browser_answers_a_pasted_error_first_with_its_values_as_match_does(
    browser: Any, page: Any, site: Path, published: dict[str, Any]
) -> None:
    """A paste (a log line, values in it) puts the record that raised it first, its values marked in its
    message, the same record `match` names; the numbers do not break the search, and the URL keeps the paste."""
    lines = lines_of(published["v2"])
    paste = "ERROR 12-01 10:00:00 [core.py:1] ValueError: max_len is smaller than max_num_seqs: 64 < 128."
    (expected,) = Matcher.of_lines(lines).match(paste).matches
    page.goto((site / "index.html").as_uri())
    page.fill("#q", paste)
    assert page.is_visible("#answer")
    first = page.get_attribute("#answers li a", "href")
    assert first == f"errors/{expected.site.id}.html#p0=64&p1=128"  # (the values, for its page: record.js)
    assert page.eval_on_selector_all("#answers mark.ph", "marks => marks.map(m => m.textContent)") == ["64", "128"]
    assert expected.bits is not None  # the evidence, in the words `match --format text` says it in
    assert f", {math.floor(expected.bits)} bits" in page.inner_text("#answers li .how")
    assert page.get_attribute("#results li a", "href") == first  # listed first too, though its words differ
    assert "q=ERROR" in page.url
    again = browser.new_page()
    again.goto(page.url)  # a shared link answers the same
    assert again.get_attribute("#answers li a", "href") == first
    again.close()
    # Typed words still filter as they did: no answer above the list.
    page.fill("#q", "max_len")
    assert not page.is_visible("#answer") and len(visible_rows(page)) == 2
    # A paste of an error no record raised answers nothing, and says so by the empty list.
    page.fill("#q", "ValueError: the flux capacitor needs 1.21 gigawatts")
    assert not page.is_visible("#answer")
    assert page.errors == []


def test_browser_says_who_else_prints_a_pasted_error_in_matchs_words(
    page: Any, site: Path, published: dict[str, Any]
) -> None:
    """A paste of what Python or argparse prints itself: the answer says who, in the words `match` says it in
    (background.py's Elsewhere.words and the message), and names no record with confidence."""
    matcher = Matcher.of_lines(lines_of(published["v2"]))
    page.goto((site / "index.html").as_uri())
    for paste in (
        "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'embed_tokens'",
        "vllm serve: error: argument --dtype: invalid choice: 'fp9' (choose from 'auto', 'half')",
    ):
        result = matcher.match(paste)
        words = "; ".join(f"{s.elsewhere.words(s.values)}: {s.elsewhere.errorMessage}" for s in result.elsewhere)
        assert result.matches == () and words
        page.fill("#q", paste)
        assert page.is_visible("#answer-note")
        assert page.text_content("#answer-note") == words + "."
        assert page.eval_on_selector_all("#answers li", "items => items.length") == len(result.weak)
    assert page.errors == []


def _shapes() -> Any:
    """scripts/shapes.py: the shapes users paste an error in, and a record's message with stand-in values."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "shapes.py"
    spec = importlib.util.spec_from_file_location("shapes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.release
def test_the_sites_search_and_match_answer_every_record_pasted_in_each_shape_alike(
    vllm_repo: Path, whole_package_scans: Path, page: Any, tmp_path: Path
) -> None:
    """Every record of vLLM 0.28.0's whole package, its message rendered with stand-in values and pasted in
    each shape of scripts/shapes.py, and every real paste of the corpus: the site's search (find.js, in
    Chromium) puts first the record `match` answers first, or answers none where it answers none."""
    shapes = _shapes()
    out = tmp_path / "out"
    whole = ["--path", "vllm", "--exception", "*", "--quiet", "--output", str(out)]
    assert cli("--sha", "v0.28.0", "--repo", str(vllm_repo), *whole).returncode == 0
    (catalog,) = out.glob("*/")
    site = tmp_path / "site"
    build("--catalog", str(catalog), "--output", str(site))
    lines = lines_of(catalog)
    matcher = Matcher.of_lines(lines)
    texts: list[tuple[str, str]] = []
    for line in lines:
        record = line.model_dump(mode="json", by_alias=True)
        message = shapes.render(record)
        texts += [(name, paste(line.record.errorClass, message)) for name, (paste, _) in shapes.SHAPES.items()]
    for corpus in (Path(__file__).parent / "data" / "pastes").glob("*.jsonl"):
        texts += [("real pastes", json.loads(row)["text"]) for row in corpus.read_text().splitlines()]
    expected = [next((m.site.id for m in matcher.match(text).matches), None) for _, text in texts]
    page.goto((site / "index.html").as_uri())
    got = page.evaluate("texts => texts.map(t => window.extractorSearch.first(t))", [text for _, text in texts])
    differ = [(shape, text[:120], e, g) for (shape, text), e, g in zip(texts, expected, got, strict=True) if e != g]
    assert differ == []
    # (What each shape finds: docs/match.md. A record with little literal text is a catch-all: a weak answer.)
    own = {(t.errorClass, t.messagePattern): t for t in matcher.templates}
    enough = sum(not own[line.record.errorClass, line.record.messagePattern].catch_all for line in lines)
    assert sum(1 for e in expected if e is not None) > 0.95 * enough * len(shapes.SHAPES)


def test_a_reproduction_run_for_the_release_is_shown_by_explain_and_the_site_and_forgotten_when_the_record_changes(
    published: dict[str, Any], tmp_path: Path
) -> None:
    """`reproduce` keeps what it ran per release (in the user cache); explain and a record's page show the program,
    the flags, what was printed and the fix, marked as run against that version; another record shows why it
    could not be reproduced; a record whose check changed shows none (it must be run again)."""
    from extractor.catalog.load import LoadedCatalog
    from extractor.model.records import Reproduction, ReproductionFix
    from extractor.publish.site.build import build_site
    from extractor.query import reproductions as store
    from extractor.query.explain import find_in, render

    lines = lines_of(published["v1"])
    shown, refused = lines[0], lines[1]
    ran = Reproduction(
        verifiedWith="vllm==9.9.1",
        python="from vllm.config import X\n\nconfig = X(a=1)\n",
        flags="--a 1",
        message="1 validation error for X\n  Value error, a is wrong",
        fix=ReproductionFix(python="from vllm.config import X\n\nconfig = X(a=2)\n", flags="--a 2", change="set a=2"),
    )
    why = Reproduction(verifiedWith="vllm==9.9.1", reason="needs a GPU platform")
    store.save("vllm", "9.9.1", {store.key(shown): ran, store.key(refused): why})
    catalog = LoadedCatalog(tuple(lines), None, "0" * 40, "release:9.9.1")

    text = render(find_in(catalog, shown.record.id), format="text")  # type: ignore[arg-type]
    assert "Reproduce  (run against vllm==9.9.1: it raises this error)" in text
    assert "    config = X(a=1)" in text and "flags:  vllm serve --a 1" in text
    assert "Fix        set a=2, run against vllm==9.9.1:" in text and "    config = X(a=2)" in text
    markdown = render(find_in(catalog, shown.record.id), format="markdown")  # type: ignore[arg-type]
    assert "## Reproduce" in markdown and "```python" in markdown and "## Fix" in markdown
    refusal = render(find_in(catalog, refused.record.id), format="text")  # type: ignore[arg-type]
    assert "Reproduce  not reproduced against vllm==9.9.1: needs a GPU platform" in refusal
    # Not a release's catalog: nothing kept applies.
    plain = LoadedCatalog(tuple(lines), None, "0" * 40, "main")
    assert "Reproduce" not in render(find_in(plain, shown.record.id), format="text")  # type: ignore[arg-type]

    build_site(catalog, output=tmp_path / "site")
    page = (tmp_path / "site" / "errors" / f"{shown.record.id}.html").read_text()
    assert 'id="reproduce-title">Reproduce</h2>' in page and 'id="fix-title">Fix</h2>' in page
    assert "Run against <code>vllm==9.9.1</code>" in page and "vllm serve --a 2" in page
    other = (tmp_path / "site" / "errors" / f"{refused.record.id}.html").read_text()
    assert "Not reproduced against <code>vllm==9.9.1</code>: needs a GPU platform." in other

    # The record's check changes (another condition): what was run for it no longer holds.
    changed = shown.model_copy(
        update={"extraction": shown.extraction.model_copy(update={"conditions": []}), "record": shown.record}
    )
    assert store.attach([changed], "vllm", "9.9.1")[0].extraction.reproduction is None
    assert store.attach([shown], "vllm", "9.9.1")[0].extraction.reproduction == ran
    # A line of the store that does not read is left out, the others kept.
    path = store.store_path("vllm", "9.9.1")
    path.write_bytes(b"{not json\n" + path.read_bytes())
    assert store.attach([shown], "vllm", "9.9.1")[0].extraction.reproduction == ran


def test_browser_a_record_page_says_its_message_and_release_and_its_fields_fit_a_desktop(
    browser: Any, tmp_path: Path
) -> None:
    """The page's title and heading are the message (not the slug); the header names the release; at desktop
    width the fields table fits its box (no cell clipped), a flag stays on one line and a docstring's
    `code` is code."""
    from tests.test_fields import ARGS, CONFIG

    documented = CONFIG.replace(
        '"""Maximum number of tokens per step.\n\n    More text."""',
        '"""Maximum number of tokens per step: with `--enable-chunked-prefill` off, at least `max_model_len`; '
        + "the scheduler fills a step with prefills and decodes up to this many tokens, then stops." * 3
        + '"""',
    )
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"vllm/config/all.py": documented, "vllm/engine/arg_utils.py": ARGS}, tag="v1")
    catalog = tmp_path / "catalog"
    assert cli("--repo", str(repo.path), "--sha", "v1", "--output", str(catalog), "--quiet").returncode == 0
    (folder,) = catalog.iterdir()
    out = tmp_path / "site"
    build("--catalog", str(folder), "--output", str(out))
    (line,) = (line for line in lines_of(folder) if "batched" in line.record.errorMessage)
    html = (out / "errors" / f"{line.record.id}.html").read_text()
    assert "<title>ValueError: batched ({self.max_num_batched_tokens}) &lt; {max_model_len} · " in html
    assert "<h1>ValueError: batched ({self.max_num_batched_tokens}) &lt; {max_model_len}</h1>" in html
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((out / "errors" / f"{line.record.id}.html").as_uri())
    clipped = page.eval_on_selector_all(
        ".fields td", "cells => cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)"
    )
    assert clipped == []
    assert page.evaluate(
        "(() => { const s = document.querySelector('.scroll'); return s.scrollWidth <= s.clientWidth; })()"
    )
    lines_per_flag = page.eval_on_selector_all("code.flag", "flags => flags.map(f => f.getClientRects().length)")
    assert lines_per_flag and set(lines_per_flag) == {1}
    assert page.eval_on_selector_all("td[data-label=meaning] code", "codes => codes.map(c => c.textContent)")[:2] == [
        "--enable-chunked-prefill",
        "max_model_len",
    ]
    page.close()


def test_a_record_page_of_a_history_says_present_where_the_history_starts(
    published: dict[str, Any], history_run: Path, tmp_path: Path
) -> None:
    """A check there at the first revision the history followed may be older than it: its page says it was
    present there, never that it was introduced there (one added later says introduced: see above)."""
    out = tmp_path / "site"
    build("--catalog", str(published["v2"]), "--history", str(history_run), "--output", str(out))
    old = by_message(lines_of(published["v2"]), "max_len is smaller")
    page = (out / "errors" / f"{old.record.id}.html").read_text()
    assert '<span class="kind">present</span> in <code>v1</code>' in page and "the first revision followed" in page
    everything = "".join(path.read_text() for path in (out / "errors").iterdir())
    assert '<span class="kind">introduced</span> in <code>v1</code>' not in everything


@pytest.mark.parametrize("exchange", [True, False], ids=["exchanged", "two renames"])
def test_a_site_build_killed_as_it_swaps_leaves_a_site_and_the_users_files(
    published: dict[str, Any], tmp_path: Path, exchange: bool
) -> None:
    """SIGKILL just before the new site goes in (one exchange), or between the two renames where the system
    cannot exchange: `DIR` still holds a whole site (or the next build puts the old one back first), a
    person's CNAME survives the next build, and nothing is left beside it."""
    from tests.conftest import run_cli

    site = tmp_path / "site"
    build("--catalog", str(published["v1"]), "--output", str(site))
    (site / "CNAME").write_text("errors.example.org\n")
    point = "site built" if exchange else "site moved aside"
    env = {"EXTRACTOR_KILL_AT": point, **({} if exchange else {"EXTRACTOR_NO_EXCHANGE": "1"})}
    killed = run_cli("site", "--catalog", str(published["v2"]), "--output", str(site), env=env)
    assert killed.returncode == -signal.SIGKILL
    if exchange:
        assert (site / "index.html").is_file() and (site / "CNAME").is_file()
    again = run_cli("site", "--catalog", str(published["v2"]), "--output", str(site))
    assert again.returncode == 0, again.stderr
    assert (site / "CNAME").read_text() == "errors.example.org\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_condition_or_an_analysis_never_becomes_a_remote_image_or_a_link_but_to_the_web(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """Backticks in a condition's source cannot end its code span (an image or a link written there stays
    text); analysis Markdown shows no image, and links only to http(s) addresses (not mailto:, //host)."""
    from extractor.publish.site.pages import _md, _md_inline

    source = 'def check(x):\n    if x == "` ![t](http://127.0.0.1:9/pixel.png) [a](http://127.0.0.1:9/) `":\n'
    git_repo.commit({"vllm/config/a.py": source + '        raise ValueError("ticks")\n'}, tag="v1")
    out = tmp_path / "out"
    assert cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out), "--quiet").returncode == 0
    (folder,) = out.iterdir()
    site = tmp_path / "site"
    build("--catalog", str(folder), "--output", str(site))
    (page,) = (site / "errors").iterdir()
    html = page.read_text()
    assert "<img" not in html and 'href="http://127.0.0.1:9/"' not in html
    assert "![t](http://127.0.0.1:9/pixel.png)" in html  # (shown as the source it is)
    shown = _md("![x](http://host/a.png) [m](mailto:a@b.c) [h](//host/x) [w](https://example.org/)")
    assert "<img" not in shown and 'href="mailto:' not in shown
    assert 'href="//host' not in shown and '<a href="https://example.org/">w</a>' in shown
    assert "<img" not in _md_inline("![x](http://host/a.png)")


def test_browser_filters_by_a_file_whose_name_holds_a_carriage_return(
    browser: Any, git_repo: GitRepo, tmp_path: Path
) -> None:
    """A browser turns a carriage return in an attribute into a line feed: an option's value is the name's
    index, so the dropdown, the shared URL and the counts' links pick that file's records alone."""
    git_repo.commit(
        {
            "vllm/config/a\rb.py": 'raise ValueError("in the odd file")\n',
            "vllm/config/c.py": 'raise ValueError("in c")\n',
        },
        tag="v1",
    )
    out = tmp_path / "out"
    assert cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out), "--quiet").returncode == 0
    (folder,) = out.iterdir()
    site = tmp_path / "site"
    build("--catalog", str(folder), "--output", str(site))
    page = browser.new_page()
    page.goto((site / "index.html").as_uri())
    odd = page.eval_on_selector("#f-file", "s => [...s.options].find(o => o.text.startsWith('vllm/config/a')).value")
    page.select_option("#f-file", odd)
    assert [row for row in visible_rows(page) if "odd file" in row] and len(visible_rows(page)) == 1
    shared = page.url
    assert "file=vllm%2Fconfig%2Fa%0Db.py" in shared
    other = browser.new_page()
    other.goto(shared)
    assert len(visible_rows(other)) == 1 and "odd file" in visible_rows(other)[0]
    other.goto((site / "index.html").as_uri())
    link = "v => [...document.querySelectorAll('a[data-filter=file]')].find(a => a.dataset.value === v).click()"
    other.evaluate(link, odd)  # (the counts' link of that file)
    assert len(visible_rows(other)) == 1 and "odd file" in visible_rows(other)[0]
    other.close()
    page.close()


def test_two_raises_on_one_long_line_each_show_their_own_cut_of_it(git_repo: GitRepo, tmp_path: Path) -> None:
    """A line over 1,000 characters is cut around each record's own raise: each record's page marks the cut
    its record holds, which contains its raise, never another record's."""
    padding = "[1] * 9, " * 300  # (2,700 characters between the two raises, on one line)
    first, second = 'ValueError("first far check")', 'ValueError("second far check")'
    source = f"def f(a):\n    raise {first}; x = [{padding}]; raise {second}\n"  # (valid, if unreachable)
    git_repo.commit({"vllm/config/long.py": source}, tag="v1")
    out = tmp_path / "out"
    assert cli("--repo", str(git_repo.path), "--sha", "v1", "--output", str(out), "--quiet").returncode == 0
    (folder,) = out.iterdir()
    site = tmp_path / "site"
    build("--catalog", str(folder), "--output", str(site))
    records = [line.record for line in lines_of(folder) if line.record.lineNumber == 2]
    assert len(records) == 2
    for record in records:
        page = (site / "errors" / f"{record.id}.html").read_text()
        marked = re.search(r'<span id="L2" class="line raise" data-n="2">(.*?)</span>(?=<span id=|</code>)', page)
        assert marked is not None
        words = record.errorMessage.split()[0]
        assert words in re.sub(r"<[^>]+>", "", marked[1]), (record.errorMessage, marked[1][:200])


def test_two_nightly_catalogs_of_one_branch_are_told_apart_by_their_shas(published: dict[str, Any]) -> None:
    """Both are `refs/heads/main`: match names each with its SHA, and explain finds a message of the newest
    in the newest (not in the other, where it is not)."""
    both = ["--catalog", str(published["v1"]), "--catalog", str(published["v2"])]
    answer = cli("match", *both, "ValueError: max_num_seqs is over the hard limit of 4096")
    assert answer.returncode == 0, answer.stderr
    (group,) = json.loads(answer.stdout)["catalogs"]
    v1, v2 = (published["shas"][tag][:12] for tag in ("v1", "v2"))
    assert group["labels"] == [f"refs/heads/main@{v1}", f"refs/heads/main@{v2}"]
    assert json.loads(answer.stdout)["matches"][0]["releases"] == [f"refs/heads/main@{v2}"]
    explained = cli("explain", *both, "max_num_seqs is over the hard limit of 4096")
    assert explained.returncode == 0, explained.stderr
    assert "over the hard limit" in explained.stdout


# Issue 56, 17: the site in a newcomer's third hour.


def test_every_count_a_page_says_agrees_with_its_number(git_repo: GitRepo, tmp_path: Path) -> None:
    """The index said "1 classes": a site of one record says 1 raise site, 1 file, 1 class, 1 error, on
    every page."""
    git_repo.commit({"vllm/config/a.py": 'raise ValueError("only one")\n'}, tag="v1")
    build("--catalog", "v1", "--repo", str(git_repo.path), "--output", str(tmp_path / "site"))
    pages = {path.name: path.read_text() for path in (tmp_path / "site").rglob("*.html")}
    assert '<p class="lede">1 raise site in 1 file, 1 class.</p>' in pages["index.html"]
    for name, text in pages.items():
        plain = re.sub(r"<[^>]+>", "", text)
        assert not re.search(r"(?<![\d.,])1 (?:raise sites|files|classes|errors|records|places)\b", plain), name


def test_browser_the_paste_box_shows_a_pasted_line_and_its_placeholder_whole(browser: Any, site: Path) -> None:
    """A pasted one-line error was cut after about a line and a half, and a phone cut the box's placeholder
    off: the box grows as its text wraps (up to ten lines, then it scrolls), empty as its placeholder does."""
    hidden = "box => box.scrollHeight - box.clientHeight"
    placeholder_hidden = """box => {
      const shown = box.clientHeight;
      box.value = box.placeholder;
      const needed = box.scrollHeight;
      box.value = '';
      return needed - shown;
    }"""
    for width in (390, 1280):
        page = browser.new_page(viewport={"width": width, "height": 800})
        page.goto((site / "index.html").as_uri())
        assert page.eval_on_selector("#q", placeholder_hidden) <= 0, width
        line = "ValueError: max_len is smaller than max_num_seqs: 64 < 128. " + "And a long tail of words. " * 8
        page.fill("#q", line)
        assert "\n" not in line and page.eval_on_selector("#q", hidden) <= 0, width
        page.fill("#q", "a line\n" * 40)  # past ten lines, it scrolls rather than push the list away
        assert page.eval_on_selector("#q", hidden) > 0
        assert page.eval_on_selector("#q", "box => box.clientHeight") < 800 / 2
        page.close()


def test_browser_opening_an_answer_shows_the_pasted_values_in_the_records_page(
    browser: Any, page: Any, site: Path
) -> None:
    """Opening the answer lost the pasted values (the record page showed the template only): they come with
    the link, in its fragment, and the page shows them in the message, marked as the index marks them, and
    beside each value it reports; opened plainly, it shows the template as before."""
    paste = "ValueError: max_len is smaller than max_num_seqs: 64 < 128."
    page.goto((site / "index.html").as_uri())
    page.fill("#q", paste)
    page.click("#answers li a")
    page.wait_for_load_state()
    message = "marks => marks.map(m => [m.textContent, m.title])"
    assert page.eval_on_selector_all("pre.message mark.ph", message) == [
        ["64", "{self.max_len}"],
        ["128", "{self.max_num_seqs}"],
    ]
    assert page.inner_text("pre.message") == "max_len is smaller than max_num_seqs: 64 < 128."
    values = page.eval_on_selector_all(".values li", "items => items.map(i => i.textContent)")
    assert values == ["self.max_len = 64", "self.max_num_seqs = 128"]
    assert page.is_visible("#pasted-note") and not page.is_visible("#template-note")
    page.goto(page.url.partition("#")[0])
    assert (
        page.inner_text("pre.message") == "max_len is smaller than max_num_seqs: {self.max_len} < {self.max_num_seqs}."
    )
    assert page.is_visible("#template-note") and not page.is_visible("#pasted-note")
    assert page.errors == []
