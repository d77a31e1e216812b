"""Model-written LaTeX is compiled without reading outside files or running commands
(world/pdflatex.py). Each attack is a document that compiles either way; the PDF's text
shows whether it read the secret. The control compiles the same document with ordinary file
access and finds the secret, so the check can fail."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from world.documents import check_document, make_doc_task
from world.pdflatex import compile_untrusted

pytestmark = pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftotext") is None,
                                reason="pdflatex or pdftotext is not installed (apt-get install texlive-latex-base "
                                       "poppler-utils)")


def document(body: str) -> str:
    return "\\documentclass{article}\n\\begin{document}\nBEFORE\n" + body + "\nAFTER\n\\end{document}\n"


def reads(path: str) -> str:
    """A body that puts the file's text in the PDF if it may be opened, and compiles either way."""
    return f"\\IfFileExists{{{path}}}{{\\input{{{path}}}}}{{NOFILE}}"


def pdf_text(pdf: bytes, folder: Path) -> str:
    (folder / "out.pdf").write_bytes(pdf)
    return subprocess.run(["pdftotext", str(folder / "out.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def secret_file(tmp_path):
    token = "SECRET" + secrets.token_hex(6).upper()
    path = tmp_path / "outside" / "secret.tex"
    path.parent.mkdir()
    path.write_text(token + "\n")
    return path, token


def test_etc_hostname_is_not_in_the_pdf(tmp_path):
    hostname = Path("/etc/hostname").read_text().strip()
    compiled = compile_untrusted(document(reads("/etc/hostname")))
    assert compiled.ok, compiled.log[-2000:]
    text = pdf_text(compiled.pdf, tmp_path)
    assert "BEFORE" in text and "AFTER" in text and "NOFILE" in text
    assert hostname not in text.replace("BEFORE", "").replace("AFTER", "").replace("NOFILE", "")


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_a_file_outside_the_folder_is_not_read(secret_file, tmp_path, how):
    path, token = secret_file
    name = str(path) if how == "absolute" else "../" * 12 + str(path).lstrip("/")
    compiled = compile_untrusted(document(reads(name)))
    assert compiled.ok, compiled.log[-2000:]
    text = pdf_text(compiled.pdf, tmp_path)
    assert "NOFILE" in text and token not in text
    assert token not in compiled.log


def test_control_ordinary_file_access_reads_the_secret(secret_file, tmp_path):
    """The same document under pdflatex's everyday settings does put the secret in the PDF."""
    path, token = secret_file
    (tmp_path / "doc.tex").write_text(document(reads(str(path))))
    env = {**os.environ, "openin_any": "a"}
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "doc.tex"], cwd=tmp_path, env=env, capture_output=True,
                   timeout=120, check=True)
    assert token in pdf_text((tmp_path / "doc.pdf").read_bytes(), tmp_path)


def test_no_shell_escape_and_no_writes_outside(tmp_path):
    marker = tmp_path / "pwned"
    outside = tmp_path / "written.tex"
    body = (f"\\immediate\\write18{{touch {marker}}}\n"
            f"\\newwrite\\out\\immediate\\openout\\out={outside}\\immediate\\write\\out{{x}}\\immediate\\closeout\\out")
    compiled = compile_untrusted(document(body))
    assert not marker.exists() and not outside.exists()
    assert compiled.pdf is None or "BEFORE" in pdf_text(compiled.pdf, tmp_path)


def test_the_document_checker_compiles_a_good_resume_and_refuses_a_broken_one():
    import random

    task = make_doc_task("doc_resume", "heldout", 3, random.Random(3))
    assert check_document(task, task["gold_output"]) == []
    broken = task["gold_output"].replace("\\end{document}", "\\input{/etc/hostname}\n\\end{document}")
    assert check_document(task, broken) == ["the LaTeX does not compile"]
