"""Our top-level packages must not share a name with an installed distribution's import name.

The repository root comes first on sys.path, so a package of ours named like an installed one
shadows it for every library that imports it: transformers 5.25 imports the Hub's `kernels`
distribution by name, and our former `kernels/` package made `import transformers` fail.
"""
import importlib.metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def our_packages(root: Path = ROOT) -> set[str]:
    return {p.parent.name for p in root.glob("*/__init__.py")} - {"tests"}


def clashes(ours: set[str], installed: dict[str, list[str]]) -> dict[str, list[str]]:
    """Our package names that an installed distribution also provides, with those distributions."""
    return {name: installed[name] for name in sorted(ours) if name in installed}


def test_no_package_of_ours_shadows_an_installed_distribution():
    installed = importlib.metadata.packages_distributions()
    found = clashes(our_packages(), installed)
    assert not found, f"rename these packages, an installed distribution uses the name: {found}"


def test_the_check_finds_a_clash(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("")
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("")
    ours = our_packages(tmp_path)
    assert ours == {"kernels", "engine"}
    assert clashes(ours, {"kernels": ["kernels"], "torch": ["torch"]}) == {"kernels": ["kernels"]}
