"""Files a person can take away: the standalone HTML replay, the LaTeX document, the answer's own
code (.tex / .html) with a sandboxed preview, and a whole conversation as JSON.

Each export goes to a fresh folder under the app's export directory, named after its title.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

from engine.trace import GenerationConfig, Result
from sessions import TurnRecord
from sessions.export_schema import ConversationImportError, read_export
from visualizer import extract_code, latex_document, sandboxed_preview, standalone_replay_html


def slug(title: str, limit: int = 40) -> str:
    """A file-name-safe version of a title: letters, digits and dashes."""
    text = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
    return text[:limit].strip("-") or "answer"


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="export-", dir=root))


def export_answer(root: Path, result: Result, config: GenerationConfig | dict[str, Any] | None, title: str,
                  prompt: str, model: str, known: list[Any] | None = None) -> tuple[list[Path], str]:
    """(files, preview html): the replay and the LaTeX document always; the answer's code when it is
    LaTeX or HTML, with a sandboxed preview for HTML ("" when there is none). `known`: what the
    generation could copy from (the conversation, earlier tool responses), so the replay marks a
    tool call's values found nowhere in it; None when that is not known."""
    folder, name = _folder(root), slug(title)
    files = [folder / f"{name}-replay.html", folder / f"{name}-tokens.tex"]
    files[0].write_text(standalone_replay_html(result, title, prompt, model, config, known=known), encoding="utf-8")
    files[1].write_text(latex_document(result, title, prompt, model), encoding="utf-8")
    kind, code = extract_code(result.text)
    preview = ""
    if kind is not None:
        code_file = folder / f"{name}-answer.{kind}"
        code_file.write_text(code + "\n", encoding="utf-8")
        files.append(code_file)
        if kind == "html":
            preview = sandboxed_preview(code)
    return files, preview


def _plain(value: Any) -> Any:
    """JSON-ready: Results and configs as dicts, NaN / infinity (not JSON) as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, GenerationConfig):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def export_conversation(root: Path, conversation: dict[str, Any]) -> Path:
    """The whole stored conversation (turns, configs, stats, frames, tool calls) as one JSON file."""
    folder = _folder(root)
    path = folder / f"{conversation['kind']}-{conversation['id']}-{slug(conversation['title'])}.json"
    path.write_text(json.dumps(_plain(conversation), indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def _nan_for_null(generation: dict[str, Any]) -> dict[str, Any]:
    """Exports write NaN as null (JSON has no NaN); frames read them back as NaN."""
    frames = [{**f, "elapsed_s": math.nan if f["elapsed_s"] is None else f["elapsed_s"],
               "committed": [[p, t, math.nan if c is None else c] for p, t, c in f["committed"]]}
              for f in generation["frames"]]
    return {**generation, "frames": frames}


def import_conversation(store: Any, path: str | Path) -> int:
    """Store a conversation exported by `export_conversation` as a new conversation (one
    transaction: all of it or nothing); returns its id. Turns keep their text, generation
    (frames, config, numbers), model and tool calls. The file is checked whole first
    (sessions/export_schema.py): a refusal is ConversationImportError, one sentence."""
    data = read_export(path)
    turns = []
    for number, turn in enumerate(data["turns"], start=1):
        if not isinstance(turn, dict) or not isinstance(turn.get("role"), str) or \
                not isinstance(turn.get("content"), str):
            raise ConversationImportError(f"Turn {number} of this export has no role and text; nothing was imported.")
        try:
            generation = Result.from_dict(_nan_for_null(turn["generation"])) if turn.get("generation") else None
        except (KeyError, TypeError, ValueError, IndexError):
            raise ConversationImportError(
                f"The trace of turn {number} cannot be read; nothing was imported.") from None
        calls = [{k: c[k] for k in ("step", "name", "arguments", "observation", "error_type") if k in c}
                 for c in turn.get("tool_calls") or []]
        turns.append(TurnRecord(turn["role"], turn["content"], generation, turn.get("config"), turn.get("model"),
                                calls))
    meta = dict(data.get("meta") or {})
    meta["imported_from"] = {"id": data.get("id"), "created_at": data.get("created_at")}
    return store.save_exchange(None, turns, kind=str(data["kind"]), title=str(data.get("title") or "imported"),
                               model=data.get("model"), meta=meta)
