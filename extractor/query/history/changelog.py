# Changelog: a history -> Markdown (a changelog per revision, then a timeline per lineage), a chart, and a
# lineage's life in one sentence.
from __future__ import annotations

import io
from collections.abc import Sequence

from extractor.model.records import EventKind, HistoryRevision, Lineage, LineageEvent
from extractor.query.diff import _marked
from extractor.util import markdown
from extractor.util.progress import shown

__all__ = ["CHURN", "lineage_sentence", "render_changelog", "render_chart"]

# What counts as churn at a revision (the chart stacks them; introductions at the first revision are not churn).
CHURN = (
    EventKind.INTRODUCED,
    EventKind.REMOVED,
    EventKind.REWORDED,
    EventKind.MOVED,
    EventKind.MODIFIED,
    EventKind.REINTRODUCED,
)
_TITLES = {
    EventKind.INTRODUCED: "Added",
    EventKind.REINTRODUCED: "Back",
    EventKind.REWORDED: "Reworded",
    EventKind.MOVED: "Moved",
    EventKind.MODIFIED: "Modified",
    EventKind.REMOVED: "Removed",
}


def _where(event: LineageEvent) -> str:
    return markdown.link(f"{event.filePath}:{event.lineNumber}", event.githubUrl)


def _entry(event: LineageEvent, lineage: Lineage) -> str:
    message = f"{markdown.code(lineage.errorClass)}: {markdown.text(event.errorMessage)}"
    before = event.previous
    if event.kind is EventKind.REWORDED and before is not None:
        old, new = _marked(before.errorMessage, event.errorMessage)
        return f"{old} → {new} ({_where(event)})"
    if event.kind is EventKind.MOVED and before is not None:
        origin = f"{before.filePath} ({before.function})"
        return f"{message}: from {markdown.text(origin)} to {_where(event)} ({markdown.text(event.function)})"
    if event.kind is EventKind.MODIFIED:
        return f"{message} ({_where(event)}; {', '.join(event.fields)})"
    return f"{message} ({_where(event)})"


def _counts(revision: HistoryRevision) -> str:
    parts = [f"{count} {kind}" for kind, count in revision.summary.items() if count]
    return ", ".join(parts) or "no change"


def render_changelog(
    lineages: Sequence[Lineage],
    revisions: Sequence[HistoryRevision],
    *,
    title: str,
    chart: str | None = None,
) -> str:
    """Render a history: a summary table per revision, the changelog newest first (what each revision
    added, removed, reworded, moved and modified), then the timeline of every lineage that changed."""
    out = [f"# {markdown.text(title)}", ""]  # (a path, a tag: text, never Markdown or HTML)
    first, last = markdown.text(revisions[0].revision), markdown.text(revisions[-1].revision)
    present = sum(1 for lineage in lineages if lineage.present)
    out += [
        f"{len(lineages)} checks seen across {len(revisions)} revisions ({first} → {last}); "
        f"{present} raised at {last}.",
        "",
    ]
    if chart:
        out += [markdown.image("checks in scope and churn per revision", chart), ""]
    out += ["| revision | checks | " + " | ".join(kind.value for kind in CHURN) + " |"]
    out += ["| --- | ---: |" + " ---: |" * len(CHURN)]
    for revision in revisions:
        counts = " | ".join(str(revision.summary.get(kind.value, 0)) for kind in CHURN)
        out.append(f"| {markdown.text(revision.revision)} | {revision.records} | {counts} |")
    by_revision: dict[str, list[tuple[Lineage, LineageEvent]]] = {r.revision: [] for r in revisions}
    for lineage in lineages:
        for event in lineage.events:
            by_revision.setdefault(event.revision, []).append((lineage, event))
    out += ["", "## Changelog", ""]
    for revision in reversed(revisions):
        out += [f"### {markdown.text(revision.revision)}", "", f"{revision.records} checks; {_counts(revision)}.", ""]
        happened = by_revision.get(revision.revision, [])
        for kind, heading in _TITLES.items():
            entries = sorted((e for e in happened if e[1].kind is kind), key=lambda e: (e[1].filePath, e[1].lineNumber))
            if entries:
                out += [f"{heading} ({len(entries)}):", ""]
                out += [f"- {_entry(event, lineage)}" for lineage, event in entries]
                out.append("")
    changed = [lineage for lineage in lineages if len(lineage.events) > 1]
    out += ["## Timelines", "", f"The {len(changed)} checks that changed after they appeared, oldest first.", ""]
    for lineage in changed:
        status = "raised" if lineage.present else "gone"
        out += [f"### {markdown.code(lineage.errorClass)}: {markdown.text(lineage.errorMessage)} ({status})", ""]
        for event in lineage.events:
            out.append(f"- {markdown.text(event.revision)}: {event.kind.value} {_entry(event, lineage)}")
        out.append("")
    return shown("\n".join(out).rstrip("\n") + "\n")


_WIDEST = 24.0  # inches: the chart of a long history
_LABELS = 120  # revisions named under its axis
_BARS = 300  # revisions drawn as bars; a longer history's churn is drawn as areas


def render_chart(revisions: Sequence[HistoryRevision], *, title: str) -> dict[str, bytes]:
    """Draw the checks in scope per revision and the churn per revision (stacked by kind): the SVG and PNG
    bytes, by suffix (`.svg`, `.png`). The SVG is the same bytes for the same input."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [revision.revision for revision in revisions]
    positions = list(range(len(labels)))
    # (a tag or path is text: `v0.2$_$x` is no mathematics)
    with plt.rc_context({"svg.hashsalt": "extractor", "font.size": 8, "text.parse_math": False}):
        # (as wide as its revisions need, up to _WIDEST inches: 5,000 commits made a 100,000-pixel PNG)
        width = min(max(6.0, 0.16 * len(labels) + 2), _WIDEST)
        figure, (top, bottom) = plt.subplots(2, 1, figsize=(width, 6), sharex=True, height_ratios=(3, 2))
        few = len(labels) <= _BARS  # (a bar and a marker per revision; past that, one area per kind: a bar is an
        # artist of its own, and 5,000 revisions of six kinds took minutes)
        marker = {"marker": "o", "markersize": 2.5} if few else {}
        top.plot(positions, [revision.records for revision in revisions], **marker)
        top.set_ylabel("checks in scope")
        top.set_title(title)
        top.grid(axis="y", alpha=0.3)
        base = [0] * len(revisions)
        for kind in CHURN:
            # The first revision introduces everything it holds: that is the baseline, not churn.
            heights = [
                0 if index == 0 and kind is EventKind.INTRODUCED else r.summary.get(kind.value, 0)
                for index, r in enumerate(revisions)
            ]
            above = [b + h for b, h in zip(base, heights, strict=True)]
            if few:
                bottom.bar(positions, heights, bottom=base, label=kind.value, width=0.8)
            else:
                bottom.fill_between(positions, base, above, step="mid", label=kind.value, linewidth=0)
            base = above
        bottom.set_ylabel("churn (events)")
        bottom.legend(ncols=3, fontsize=7, frameon=False, loc="upper left")  # ("best" warns when slow to place)
        bottom.grid(axis="y", alpha=0.3)
        step = -(-len(labels) // _LABELS)  # (at most _LABELS revisions named under the axis: every step-th)
        bottom.set_xticks(positions[::step], labels[::step], rotation=90, fontsize=6)
        figure.tight_layout()
        drawn = {}
        for suffix, metadata in ((".svg", {"Date": None}), (".png", {"Software": None})):
            buffer = io.BytesIO()
            figure.savefig(buffer, format=suffix[1:], metadata=metadata, dpi=150)
            drawn[suffix] = buffer.getvalue()
        plt.close(figure)
    return drawn


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def lineage_sentence(lineage: Lineage, *, start: str | None = None) -> str:
    """Say a lineage's life in one sentence: "introduced in 0.6.0, reworded in 0.8.0 (was: ...), raised at
    vllm/config/model.py:1234 in 0.33.0". A check there at `start`, the history's first revision, may be
    older than it: "present at 0.6.0 (the first revision followed)"."""
    parts = []
    for event in lineage.events:
        if event.kind is EventKind.INTRODUCED and event.revision == start:
            parts.append(f"present at {event.revision} (the first revision followed)")
        elif event.kind is EventKind.REWORDED and event.previous is not None:
            parts.append(f"reworded in {event.revision} (was: {_short(event.previous.errorMessage)})")
        elif event.kind is EventKind.MOVED and event.previous is not None:
            before = event.previous
            where = event.filePath if before.filePath != event.filePath else f"{event.function}()"
            parts.append(f"moved to {where} in {event.revision}")
        elif event.kind is EventKind.MODIFIED:
            parts.append(f"modified in {event.revision} ({', '.join(event.fields)})")
        else:
            parts.append(f"{event.kind.value} in {event.revision}")
    where = f"{lineage.filePath}:{lineage.lineNumber} in {lineage.lastSeen}"
    parts.append(f"raised at {where}" if lineage.present else f"last raised at {where}")
    return ", ".join(parts)
