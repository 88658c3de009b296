"""Options: known without pydantic, and keying a whole catalog as the scope's model does."""

from __future__ import annotations

import subprocess
import sys

import pytest

from extractor.pipeline.options import ExtractOptions


@pytest.mark.parametrize(
    "options",
    [
        ExtractOptions(),
        ExtractOptions(paths=("/vllm/", "./pkg//a"), exceptions=("*",), context=0),
        ExtractOptions(paths=("",), config_from=("cfg/", "."), flags_from="/cli/args.py/", repo_name="o/n"),
    ],
)
def test_the_scope_as_data_is_the_scope_models_dump(options: ExtractOptions) -> None:
    """What the command line keys a cached catalog by before it imports pydantic is what the pipeline
    keys it by: the Scope model's dump."""
    assert options.scope_data == options.scope.model_dump()


def test_the_options_and_the_cache_keys_need_no_pydantic() -> None:
    code = (
        "import sys\n"
        "import extractor.pipeline.cache, extractor.pipeline.options\n"
        "import extractor.repo.git.blobs, extractor.repo.git.history, extractor.repo.git.write\n"
        "import extractor.pipeline.workers, extractor.pipeline.write\n"
        "print('pydantic' in sys.modules)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout == "False\n"
