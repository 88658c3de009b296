# Models: the schema-v2 record, what the extractor captures beside it, and the run manifest.
# A field is declared here alone: the scan's values (scanned.py) are written from these lines (schema.py).
from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

# The scan's kinds and pieces live in a module without pydantic (a worker process scans without it);
# they are the models' too.
from extractor.model.kinds import ConditionKind as ConditionKind
from extractor.model.kinds import ErrorType as ErrorType
from extractor.model.kinds import MessageKind as MessageKind
from extractor.model.kinds import Piece as Piece

SCHEMA_VERSION: Literal[2] = 2

M = TypeVar("M", bound=BaseModel)

Hex16 = Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]
# A release sdist only records a short commit id, so a SHA may be 7-40 hex digits.
Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{7,40}$")]
Timestamp = Annotated[str, Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")]


# Every model's validator and serializer are built when it is first used, not when this module is imported:
# a run builds only the models it uses (an extraction none: it writes its catalog as data).
_BUILT_ON_USE = ConfigDict(defer_build=True)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", **_BUILT_ON_USE)


class Placeholder(_Frozen):
    """One `{...}` of a message template and the capture group that matches its rendering."""

    expression: str
    conversion: Literal["r", "s", "a"] | None = None
    formatSpec: str | None = None
    debug: bool = False
    start: int
    end: int
    group: str


class Condition(_Frozen):
    """One link of the chain of conditions under which a raise runs, outermost first."""

    kind: ConditionKind
    test: str
    negated: bool = False
    line: int


class FieldRef(_Frozen):
    """A configuration field a record's condition or message reads, as far as it can be resolved."""

    expression: str
    class_: str | None = Field(default=None, alias="class")
    field: str | None = None
    annotation: str | None = None
    default: str | None = None
    constraints: list[str] = []
    doc: str | None = None
    flags: list[str] = []
    via: str | None = None
    key: str | None = None
    resolved: bool = False
    reason: str | None = None

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, serialize_by_alias=True, **_BUILT_ON_USE
    )


class ReproductionReason(StrEnum):
    """Why a record was not reproduced: a named class, its value what JSON and people read."""

    GPU_PLATFORM = "needs a GPU platform"
    REAL_MODEL = "needs a real model"
    COMPUTED = "a condition on a value computed at run time"
    NOT_SOLVABLE = "not solvable from its conditions"
    RAISED_ELSEWHERE = "raised elsewhere"
    DID_NOT_RAISE = "did not raise"
    HUNG = "hung or crashed"  # (a time limit's answer: not kept, run again next time)


# Where a reproduction stands: a `vllm serve` command line run through vLLM's own parser, validation and
# `create_engine_config`; or the config class built in Python, where no serve line reaches the check.
ReproductionLevel = Literal["serve", "config"]


class ServeLine(_Frozen):
    """A `vllm serve MODEL ARGV` line that was run: its flags after the model, in long form, the model folder's
    `config.json` and the environment it ran with."""

    argv: list[str]
    model: dict[str, JsonValue] | None = None
    env: dict[str, str] = {}

    def groups(self) -> list[list[str]]:
        """Its flags, each with its values: `--a 1 2 --b` -> [[--a, 1, 2], [--b]]."""
        groups: list[list[str]] = []
        for token in self.argv:
            if token.startswith("--") or not groups:
                groups.append([token])
            else:
                groups[-1].append(token)
        return groups

    def command(self, model: str = "./model") -> str:
        """The line as a person types it: its environment first, one flag (with its values) a line; `model` names
        the folder that holds the `config.json` it ran with."""
        import shlex

        head = [*(f"{name}={shlex.quote(value)}" for name, value in sorted(self.env.items())), "vllm", "serve", model]
        groups = self.groups()
        return " \\\n".join([" ".join(head), *("  " + " ".join(shlex.quote(t) for t in group) for group in groups)])


class ServeSolution(_Frozen):
    """A change to a `vllm serve` line that was run and passed: the check no longer fires, and nothing else did."""

    change: str  # in the words of the flags: `set --max-cpu-loras 9 (was 8)`, `remove --x`
    serve: ServeLine


class ReproductionFix(_Frozen):
    """The change that makes a reproduced check pass, run: the same program changed, and what fired next."""

    python: str
    flags: str | None = None  # the `vllm serve` flags of the changed program; None: one of its values has no flag
    change: str  # the change in words: `set max_num_batched_tokens=4096`
    then: Hex16 | None = None  # the record whose check fired next, when another did
    serve: ServeLine | None = None  # the fixed `vllm serve` line, run: it no longer raises at the record's line


class Reproduction(_Frozen):
    """A record's error raised by the codebase itself (`extractor reproduce`), or why it could not be."""

    verifiedWith: str  # `vllm==0.28.0`: what the program was run against
    python: str | None = None  # a self-contained program that raises the error at the record's own raise
    flags: str | None = None  # the `vllm serve` flags that set the same values; None: one has no flag
    message: str | None = None  # `str()` of what it raised, as the user sees it (pydantic's wrapping included)
    fix: ReproductionFix | None = None
    reason: ReproductionReason | None = None  # set when there is no program: why
    detail: str | None = None
    level: ReproductionLevel | None = None  # where the reproduction stands (None: not reproduced)
    serve: ServeLine | None = None  # the `vllm serve` line that raised it, run (None: none reaches the check)
    solutions: list[ServeSolution] | None = None  # changes of the serve line that ran and passed, the fix's first
    serveDetail: str | None = None  # why a reproduction stays at the config level (no serve line reaches it)

    @property
    def reproduced(self) -> bool:
        """Whether a run raised the error here: a program (the config level) or a `vllm serve` line (found on
        the serve path alone, with no program behind it)."""
        return self.python is not None or self.serve is not None


class Extraction(_Frozen):
    """What the extractor captures beside a record for later analysis."""

    placeholders: list[Placeholder]
    conditions: list[Condition]
    function: str
    cause: str | None
    messageKind: MessageKind
    messageSource: str | None
    column: int
    endLineNumber: int
    warnings: list[str]
    fields: list[FieldRef] = []
    related: list[str] = []
    # Set where the record was run against the codebase (`reproduce`); catalogs as extracted leave it out.
    reproduction: Reproduction | None = None


class Site(_Frozen):
    """One raise site of one file: everything that depends on the file's bytes alone."""

    errorClass: str
    errorMessage: str
    messagePattern: str
    lineNumber: int
    sourceCode: str
    sourceCodeStart: int
    sourceCodeEnd: int
    extraction: Extraction
    slugStem: str  # the record's slug before it is made unique in the catalog
    reads: list[str]  # the attribute chains its conditions, then its placeholders, read (once each)
    # A digest of what its message template was made from: a later version's same text reuses it.
    templateKey: str | None = None


class Record(_Frozen):
    """A schema-v2 catalog record: the reference's 31 keys, in the reference's order."""

    id: Hex16
    repo: str
    slug: str
    errorCode: str | None = None
    errorMessage: str
    messagePattern: str
    errorType: ErrorType
    errorClass: str
    httpStatus: int | None = None
    severity: Literal["error"] = "error"
    filePath: str
    lineNumber: int
    sourceCode: str
    sourceCodeStart: int
    sourceCodeEnd: int
    githubUrl: str
    documentation: str | None = None
    triggerScenarios: str | None = None
    commonSituations: str | None = None
    solutions: list[str] | None = None
    exampleFix: str | None = None
    handlingStrategy: str | None = None
    validationCode: str | None = None
    typeGuard: str | None = None
    tryCatchPattern: str | None = None
    preventionTips: list[str] | None = None
    tags: list[str] | None = None
    backgroundTag: str | None = None
    analyzedSha: Sha
    analyzedAt: Timestamp
    schemaVersion: Literal[2] = SCHEMA_VERSION


class CatalogLine(_Frozen):
    """One line of records.jsonl."""

    record: Record
    extraction: Extraction
    datasetVersion: Timestamp


class SkippedFile(_Frozen):
    """A file in scope that could hold a site and could not be parsed."""

    path: str
    reason: str


class SkippedSite(_Frozen):
    """A raise in scope that cannot become a record (its class is not a static name)."""

    path: str
    line: int
    reason: str


class Scope(_Frozen):
    """The options that decide which sites a catalog holds and how they are captured."""

    paths: list[str]
    exceptions: list[str]
    context: int
    configFrom: list[str] = ["vllm/config"]
    flagsFrom: str = "vllm/engine/arg_utils.py"


class Counts(_Frozen):
    """Figures of one extraction run."""

    filesInScope: int
    filesParsed: int
    records: int
    skippedFiles: int
    skippedSites: int


class Manifest(_Frozen):
    """Describes one catalog directory: what was extracted, from where, by which version."""

    repo: str
    sha: Sha
    revision: str
    committedAt: str | None
    analyzedAt: Timestamp
    extractorVersion: str
    scope: Scope
    counts: Counts
    # The SHA-256 of records.jsonl, set as the manifest is written (after the records): a catalog is whole
    # when it matches. None until the manifest is written with its records.
    recordsSha256: str | None = None
    skippedFiles: list[SkippedFile]
    skippedSites: list[SkippedSite]


class IndexEntry(_Frozen):
    """One published catalog in a nightly index."""

    sha: Sha
    committedAt: str | None
    analyzedAt: Timestamp
    records: int
    summary: dict[str, int] | None


class NightlyIndex(_Frozen):
    """The nightly job's index.json: the head's catalog, and every published one, newest first."""

    latest: Sha | None
    catalogs: list[IndexEntry]


class FieldFacts(_Frozen):
    """A field declared in a class body: what its source says."""

    name: str
    annotation: str
    default: str | None
    constraints: list[str]
    doc: str | None
    init: bool = True


class ClassFacts(_Frozen):
    """A top-level class of a file: its bases, fields and what its __post_init__ assigns."""

    name: str
    bases: list[str]
    fields: list[FieldFacts]
    postInit: list[str]


class FlagFacts(_Frozen):
    """What a CLI definition file says: flags per (class, field), and keys it overwrites itself."""

    flags: list[tuple[str, str, list[str], bool]]  # class, field, option strings, explicit BooleanOptionalAction
    overwritten: list[tuple[str, str]]  # (attribute of the args object, key)


class FileResult(BaseModel):
    """What scanning one blob gave (a cache entry): the outcome, and the pieces a later version may reuse."""

    model_config = ConfigDict(frozen=True, extra="forbid", **_BUILT_ON_USE)

    kind: Literal["scanned", "skipped", "ruled-out"]
    reason: str | None = None
    sites: list[Site] = []
    skippedSites: list[SkippedSite] = []
    classes: list[ClassFacts] = []
    flags: FlagFacts | None = None
    facts: bool = False  # whether classes and flags were read (asked of config and CLI files only)
    # Whether the text prefilter lets the file through: one read only for its facts is ruled out where
    # they are not wanted, as it would be if scanned for its sites alone.
    couldHold: bool = True
    pieces: list[Piece] = []


def replace(model: M, /, **changes: Any) -> M:
    """Return a copy of `model` with some fields changed (unvalidated, as `model.model_copy` does)."""
    return model.model_copy(update=changes)


# History: the life of each check across an ordered list of revisions (history.jsonl and history.json).


class EventKind(StrEnum):
    """What happened to a lineage at one revision (in the order a lineage can live them)."""

    INTRODUCED = "introduced"
    REWORDED = "reworded"
    MOVED = "moved"
    MODIFIED = "modified"
    REMOVED = "removed"
    REINTRODUCED = "reintroduced"


class Previous(_Frozen):
    """A check as it was at the revision before an event (what a rewording, move or change left behind)."""

    id: Hex16
    filePath: str
    lineNumber: int
    function: str
    errorMessage: str


class LineageEvent(_Frozen):
    """One event of a lineage: the revision it happened at and the check as it then was.

    For `removed`, the check is as last seen (the revision before); `previous` is set for `reworded`,
    `moved` and `modified`, and `fields` names what differs (as `diff` does).
    """

    kind: EventKind
    revision: str
    sha: Sha
    id: Hex16
    filePath: str
    lineNumber: int
    function: str
    errorMessage: str
    githubUrl: str
    previous: Previous | None = None
    fields: list[str] = []


class Lineage(_Frozen):
    """One line of history.jsonl: a check followed from revision to revision, events oldest first."""

    lineage: Hex16  # the id the check had when first seen: stable whatever happens to it later
    errorClass: str
    # The check as last seen (the newest revision where it is present): line shifts make no event.
    id: Hex16
    errorMessage: str
    slug: str
    filePath: str
    lineNumber: int
    function: str
    githubUrl: str
    firstSeen: str  # revision labels, as in `revisions` of history.json
    lastSeen: str
    present: bool  # whether the newest revision holds it
    events: list[LineageEvent]


class HistoryRevision(_Frozen):
    """One revision of a history, oldest first: how many checks it holds and what changed coming to it."""

    revision: str
    sha: Sha  # the SHA its records point at (a release's own commit id)
    committedAt: str | None
    records: int
    summary: dict[str, int]  # events of each kind at this revision; the first revision introduces all


class HistoryManifest(_Frozen):
    """history.json: what a history covers (repository, scope, revisions oldest first)."""

    repo: str
    scope: Scope
    extractorVersion: str
    analyzedAt: Timestamp
    lineages: int
    revisions: list[HistoryRevision]
