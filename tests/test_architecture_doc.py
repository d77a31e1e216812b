"""docs/ARCHITECTURE.md stays true to the tree: every file or folder it names in backticks
exists, and its "where to change what" table answers at least ten changes."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "ARCHITECTURE.md").read_text()


def named_paths(text: str) -> set[str]:
    """Backticked repository paths: a/b.py, a/b.json, a/ or a/b/ (not module names or commands)."""
    spans = re.findall(r"`([^`\s]+)`", text)
    return {s for s in spans if "/" in s and not s.startswith(("python", "-")) and re.fullmatch(r"[\w./-]+", s)}


def test_every_named_path_exists():
    paths = named_paths(DOC)
    assert len(paths) > 20, "the doc names the files it talks about"
    missing = sorted(p for p in paths if not (ROOT / p.split("#")[0]).exists())
    assert not missing, f"docs/ARCHITECTURE.md names paths that are not in the tree: {missing}"


def test_the_change_table_answers_ten_changes():
    section = DOC.split("## Where to change what", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| change")]
    assert len(rows) >= 10


def test_a_missing_path_is_caught():
    assert named_paths("see `engine/nope.py` and `python -m x` and `kernels/`") == {"engine/nope.py", "kernels/"}


def test_the_sampler_table_lists_every_sampler():
    from engine.sampler_table import SAMPLERS

    rows = set(re.findall(r"^\| `(\w+)` \|", DOC, flags=re.M))
    assert set(SAMPLERS) - rows == set()
