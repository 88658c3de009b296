# Options: what an extraction is asked for (its scope, how many processes, whether to use the cache);
# without pydantic, so that the command line knows them before it imports the pipeline.
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from extractor.model.records import Scope
    from extractor.scanning.source import ScanOptions

__all__ = ["ExtractOptions", "scope_path"]


@dataclass(frozen=True)
class ExtractOptions:
    """The scope of an extraction: which paths, which classes, how much context."""

    paths: tuple[str, ...] = ("vllm/config",)
    exceptions: tuple[str, ...] = ("ValueError",)
    context: int = 18
    repo_name: str | None = None
    jobs: int | None = None  # processes that scan, the main one included; None means one per core
    cache: bool = True
    config_from: tuple[str, ...] = ("vllm/config",)
    flags_from: str = "vllm/engine/arg_utils.py"

    def __post_init__(self) -> None:
        # What is in scope is a set: the paths and the classes sorted (and each once), so that the same scope
        # given in another order is the same scope (one folder, one cache key, one nightly history).
        object.__setattr__(self, "paths", tuple(sorted({scope_path(path) for path in self.paths})))
        object.__setattr__(self, "exceptions", tuple(sorted(set(self.exceptions))))
        object.__setattr__(self, "config_from", tuple(scope_path(path) for path in self.config_from))
        object.__setattr__(self, "flags_from", self.flags_from.strip("/"))

    @property
    def scan_options(self) -> ScanOptions:
        from extractor.scanning.source import ScanOptions

        return ScanOptions(exceptions=self.exceptions, context=self.context)

    @classmethod
    def of_scope(cls, scope: Scope) -> ExtractOptions:
        """Return the options a catalog of `scope` was extracted with (the inverse of `scope`)."""
        return cls(
            paths=tuple(scope.paths),
            exceptions=tuple(scope.exceptions),
            context=scope.context,
            config_from=tuple(scope.configFrom),
            flags_from=scope.flagsFrom,
        )

    @property
    def scope_data(self) -> dict[str, object]:
        """The scope as `scope.model_dump()` gives it, without pydantic (what a cached catalog is keyed by)."""
        return {
            "paths": list(self.paths),
            "exceptions": list(self.exceptions),
            "context": self.context,
            "configFrom": list(self.config_from),
            "flagsFrom": self.flags_from,
        }

    @property
    def scope(self) -> Scope:
        from extractor.model.records import Scope

        return Scope.model_validate(self.scope_data)


def scope_path(prefix: str) -> str:
    """A path prefix as a scope records it: no leading ./ or /, no trailing or doubled slash; the whole
    repository ('', '/', '.', './') is '.'."""
    return posixpath.normpath(prefix.strip("/") or ".")
