"""Compile LaTeX that a model wrote, with no access beyond its own folder.

Model output is untrusted: `\\input{/etc/passwd}` or `\\write18{...}` in an answer must not read
or run anything. pdflatex runs with `-no-shell-escape` (no \\write18) and kpathsea's paranoid
file access (`openin_any=p`, `openout_any=p`: no absolute paths, no `..`, no dot files, for
reading and writing) in a fresh temporary folder that is its working and output directory, with
a minimal environment. Classes and packages still load: kpathsea finds them in the TeX tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

COMPILE_TIMEOUT_S = 60.0


@dataclass
class Compiled:
    ok: bool                 # pdflatex exited 0 and wrote a PDF
    pdf: bytes | None
    log: str                 # pdflatex's .log (its terminal output when there is no log)


def pdflatex_available() -> bool:
    return shutil.which("pdflatex") is not None


def sandbox_env(folder: str) -> dict[str, str]:
    """The environment pdflatex runs in: paranoid reads and writes, no shell escape, HOME and
    TEXMFOUTPUT in the temporary folder, nothing else of ours passed on."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": folder, "TEXMFOUTPUT": folder,
            "TEXMFVAR": folder, "openin_any": "p", "openout_any": "p", "shell_escape": "f", "LC_ALL": "C"}


def compile_untrusted(tex: str, timeout_s: float = COMPILE_TIMEOUT_S) -> Compiled:
    """Run pdflatex once on `tex` in a sandbox (module docstring); raises FileNotFoundError when
    pdflatex is not installed and subprocess.TimeoutExpired past `timeout_s`."""
    with tempfile.TemporaryDirectory(prefix="dp-latex-") as folder:
        Path(folder, "doc.tex").write_text(tex, encoding="utf-8")
        run = subprocess.run(
            ["pdflatex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
             f"-output-directory={folder}", "doc.tex"],
            cwd=folder, env=sandbox_env(folder), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s)
        pdf_path, log_path = Path(folder, "doc.pdf"), Path(folder, "doc.log")
        pdf = pdf_path.read_bytes() if pdf_path.is_file() else None
        log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else (
            run.stdout.decode("utf-8", errors="replace"))
    return Compiled(ok=run.returncode == 0 and pdf is not None, pdf=pdf, log=log)
