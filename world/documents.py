"""Document tasks from the same demos: resume facts -> a LaTeX resume, a page spec -> an
HTML page. The answer is the document itself, as plain assistant text (no tool call), kept
short. Each kind has a checker that returns the problems it finds (empty = pass): required
fields present, the LaTeX compiles where `pdflatex` exists, the HTML parses and has the
required elements.
"""

from __future__ import annotations

import html
import random
import shutil
import subprocess
from html.parser import HTMLParser
from typing import Any

from world import entities
from world.pdflatex import compile_untrusted
from world.templates import INSTRUCTIONS

DOC_INTENTS = ("doc_resume", "doc_html")
_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Escape the ten LaTeX specials in one pass."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def resume_latex(fields: dict[str, Any]) -> str:
    escaped = {k: latex_escape(str(v)) for k, v in fields.items()}
    return ("\\documentclass{article}\n\\begin{document}\n"
            f"\\section*{{{escaped['name']}}}\n{escaped['email']}\n"
            f"\\subsection*{{Experience}}\n{escaped['role']}, {escaped['company']}, {escaped['years']}\n"
            f"\\subsection*{{Skills}}\n{escaped['skills']}\n"
            "\\end{document}")


def html_page(spec: dict[str, Any]) -> str:
    escaped = {k: html.escape(str(v)) for k, v in spec.items() if k != "item_list"}
    items = "".join(f"<li>{html.escape(i)}</li>" for i in spec["item_list"])
    return (f"<!DOCTYPE html><html><head><title>{escaped['title']}</title></head>\n"
            f"<body><h1>{escaped['heading']}</h1><p>{escaped['text']}</p><ul>{items}</ul>\n"
            f"<a href=\"{escaped['href']}\">{escaped['label']}</a></body></html>")


def _resume_slots(rng: random.Random, split: str) -> dict[str, Any]:
    name = entities.pick(rng, "name", split)
    start = rng.randint(2008, 2020)
    return {"name": name, "email": entities.email_for(name), "role": rng.choice(entities.ROLES),
            "company": rng.choice(entities.COMPANIES), "years": f"{start}-{start + rng.randint(1, 5)}",
            "skills": ", ".join(rng.sample(entities.SKILLS, 3))}


def _page_slots(rng: random.Random, split: str) -> dict[str, Any]:
    styles = rng.sample(entities.DRAWN_STYLES, rng.randint(2, 3))
    item_list = [f"{rng.choice(entities.COLORS)} {s}" for s in styles]
    href, label = rng.choice(entities.LINKS)
    heading = f"{rng.choice(entities.COLORS).title()} {entities.plural(rng.choice(entities.DRAWN_STYLES))}"
    return {"title": rng.choice(entities.PAGE_TOPICS), "heading": heading, "text": rng.choice(entities.PAGE_TEXTS),
            "item_list": item_list, "items": ", ".join(item_list), "href": href, "label": label}


def make_doc_task(intent: str, split: str, seed: int, rng: random.Random) -> dict[str, Any]:
    slots = _resume_slots(rng, split) if intent == "doc_resume" else _page_slots(rng, split)
    gold = resume_latex(slots) if intent == "doc_resume" else html_page(slots)
    outputs = ([slots["name"], slots["email"], slots["role"], slots["company"]] if intent == "doc_resume"
               else [slots["title"], slots["heading"], slots["href"]])
    return {"id": f"{intent}-{split}-{seed}", "domain": "document", "intent": intent, "split": split,
            "instruction": rng.choice(INSTRUCTIONS[intent]).format(**slots), "slots": slots,
            "gold_output": gold, "gold_actions": [], "outputs": outputs}


# -- checkers --------------------------------------------------------------------------------
def check_latex(text: str, facts: dict[str, Any], compile_pdf: bool = True) -> list[str]:
    problems = [f"missing {m}" for m in ("\\documentclass", "\\begin{document}", "\\end{document}") if m not in text]
    depth = 0
    for ch in text.replace("\\{", "").replace("\\}", ""):
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            break
    if depth != 0:
        problems.append("unbalanced braces")
    for key in ("name", "email", "role", "company", "years"):
        if latex_escape(str(facts[key])) not in text:
            problems.append(f"the {key} {facts[key]!r} is missing")
    for skill in str(facts["skills"]).split(", "):
        if latex_escape(skill) not in text:
            problems.append(f"the skill {skill!r} is missing")
    if not problems and compile_pdf and shutil.which("pdflatex"):
        problems += _compile_problems(text)
    return problems


def _compile_problems(text: str) -> list[str]:
    """The answer is model output: compiled in the sandbox of world/pdflatex.py."""
    try:
        compiled = compile_untrusted(text)
    except subprocess.TimeoutExpired:
        return ["pdflatex timed out"]
    return [] if compiled.ok else ["the LaTeX does not compile"]


class _Elements(HTMLParser):
    """Collects (tag, attrs, text) of every element; tolerant of broken markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[list[Any]] = []
        self.open: list[list[Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = [tag, dict(attrs), ""]
        self.elements.append(element)
        if tag not in ("br", "img", "meta", "link", "hr", "input"):
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                break

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element[2] += data


def check_html(text: str, spec: dict[str, Any]) -> list[str]:
    parser = _Elements()
    try:
        parser.feed(text)
        parser.close()
    except Exception:  # noqa: BLE001 - any parser failure is a problem to report
        return ["the HTML does not parse"]
    texts: dict[str, list[str]] = {}
    for tag, _, body in parser.elements:
        texts.setdefault(tag, []).append(body.strip())
    problems = [f"missing <{t}>" for t in ("html", "body") if t not in texts]
    if spec["title"] not in texts.get("title", []):
        problems.append(f"the title is not {spec['title']!r}")
    if spec["heading"] not in texts.get("h1", []):
        problems.append(f"no <h1> {spec['heading']!r}")
    if not any(spec["text"] in p for p in texts.get("p", [])):
        problems.append(f"no <p> with {spec['text']!r}")
    for item in spec["item_list"]:
        if item not in texts.get("li", []):
            problems.append(f"no <li> {item!r}")
    links = [(attrs.get("href"), body.strip()) for tag, attrs, body in parser.elements if tag == "a"]
    if (spec["href"], spec["label"]) not in links:
        problems.append(f"no link {spec['label']!r} to {spec['href']!r}")
    return problems


def check_document(task: dict[str, Any], text: str, compile_pdf: bool = True) -> list[str]:
    """Problems with a generated document for a document task (empty = pass)."""
    if task["intent"] == "doc_resume":
        return check_latex(text, task["slots"], compile_pdf)
    return check_html(text, task["slots"])
