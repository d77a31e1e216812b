"""The Sessions tab: list and search stored chats, comparisons and agent runs; open one, replay
the denoising frames of any of its generations, export it, delete it.

Titles, snippets and turn texts are model or user text: every table here is built with
markupsafe, so all of it is escaped.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr
from markupsafe import Markup

from sessions import StoreError

from .chat import file_list, scrubber_for
from .exports import export_answer, export_conversation
from .live import TraceView, markdown_safe
from .messages import user_error
from .state import AppContext

KIND_CHOICES = [("All", "all"), ("Chats", "chat"), ("Comparisons", "compare"), ("Agent runs", "agent"),
                ("API calls", "api")]
LIST_LIMIT = 200


def _label(row: dict[str, Any]) -> str:
    return f"#{row['id']} · {row['kind']} · {' '.join(str(row['title']).split())[:70]}"


def sessions_table(rows: list[dict[str, Any]], searched: bool) -> str:
    if not rows:
        return '<div class="dp-empty">{}</div>'.format("No match." if searched else "Nothing stored yet.")
    head = ("#", "kind", "title" if not searched else "match", "model", "updated", "turns")
    out = []
    for r in rows:
        text = r.get("snippet") if searched else r["title"]
        cells = (r["id"], r["kind"], text, r.get("model") or "", str(r["updated_at"])[:19].replace("T", " "),
                 r.get("turn_count", ""))
        out.append(Markup("<tr>{}</tr>").format(Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    return str(Markup('<table class="dp-table dp-sessions"><tr>{}</tr>{}</table>').format(header, Markup("").join(out)))


def transcript_html(conversation: dict[str, Any]) -> str:
    """Every turn in order, with the model, the stats of its generation and its tool calls."""
    parts = [Markup('<div class="dp-meta">{} #{} · {} · {}</div>').format(
        conversation["kind"], conversation["id"], conversation.get("model") or "", conversation["created_at"][:19])]
    for turn in conversation["turns"]:
        notes = []
        if turn["model"]:
            notes.append(turn["model"])
        if turn["generation"] is not None:
            s = turn["generation"].stats
            notes.append(f"{s.new_tokens} tokens · NFE {s.nfe} · {s.seconds:.2f} s · {s.stop_reason}")
        calls = Markup("").join(Markup('<div class="dp-call">tool call: <code>{}</code> {}</div>').format(
            c["name"], json.dumps(c["arguments"], ensure_ascii=False)) for c in turn["tool_calls"])
        parts.append(Markup('<div class="dp-turn dp-{}"><div class="dp-role">{} {}</div><pre>{}</pre>{}</div>').format(
            turn["role"], turn["role"], " · ".join(notes), turn["content"], calls))
    return str(Markup('<div class="dp-transcript">{}</div>').format(Markup("").join(parts)))


class SessionsHandlers:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def _store(self):
        if self.ctx.store is None:
            raise user_error(f"There is no session store: {self.ctx.store_problem}")
        return self.ctx.store

    def refresh(self, kind: str, query: str) -> tuple:
        """(table, conversation picker, status) for the kind filter and the search words."""
        if self.ctx.store is None:
            return f'<div class="dp-empty">{Markup.escape(self.ctx.store_problem)}</div>', gr.skip(), ""
        kind = None if kind in (None, "", "all") else kind
        query = (query or "").strip()
        try:
            rows = (self.ctx.store.search(query, kind=kind, limit=LIST_LIMIT) if query
                    else self.ctx.store.list_conversations(kind=kind, limit=LIST_LIMIT))
        except StoreError as exc:
            raise user_error(str(exc)) from None
        choices = [(_label(r), str(r["id"])) for r in rows]
        status = f"{len(rows)} conversation(s)" + (f" matching “{markdown_safe(query)}”." if query else ".")
        return sessions_table(rows, bool(query)), gr.Dropdown(choices=choices, value=None), status

    def open(self, choice: str | None) -> tuple:
        """(transcript, turn picker, conversation state, status) for the picked conversation."""
        if not choice:
            raise user_error("Pick a conversation first (search or refresh the list, then choose one).")
        store = self._store()
        try:
            conversation = store.get_conversation(int(choice))
        except (ValueError, TypeError):
            raise user_error(f"'{choice}' is not a conversation number.") from None
        except StoreError as exc:
            raise user_error(str(exc)) from None
        turns = [(f"turn {t['idx'] + 1} · {t['role']} · {t['model'] or ''} · {' '.join(t['content'].split())[:50]}",
                  str(t["idx"])) for t in conversation["turns"] if t["generation"] is not None]
        first = turns[0][1] if turns else None
        status = f"Opened #{conversation['id']}: {len(conversation['turns'])} turns, {len(turns)} with a trace."
        return transcript_html(conversation), gr.Dropdown(choices=turns, value=first), conversation, status

    def show_turn(self, conversation: dict[str, Any] | None, turn_choice: str | None) -> tuple:
        """(trace state, scrubber, panel, heatmap, commits) replaying one stored generation."""
        if conversation is None or turn_choice in (None, ""):
            return None, gr.Slider(visible=False), "", None, None
        turn = next((t for t in conversation["turns"] if str(t["idx"]) == str(turn_choice)), None)
        if turn is None or turn["generation"] is None:
            raise user_error("That turn has no generation trace to replay.")
        prompt = next((t["content"] for t in reversed(conversation["turns"][: turn["idx"]]) if t["role"] == "user"), "")
        view = TraceView.from_result(turn["generation"], turn["config"], turn["model"] or "", prompt)
        heatmap, commits = view.plots()
        return view, scrubber_for(view), view.panel("replay"), heatmap, commits

    def delete(self, choice: str | None, kind: str, query: str) -> tuple:
        """Delete the picked conversation; (table, picker, status, transcript, conversation state)."""
        if not choice:
            raise user_error("Pick the conversation to delete first.")
        store = self._store()
        try:
            gone = store.delete_conversation(int(choice))
        except (ValueError, TypeError):
            raise user_error(f"'{choice}' is not a conversation number.") from None
        except StoreError as exc:
            raise user_error(str(exc)) from None
        table, picker, _ = self.refresh(kind, query)
        status = (f"Deleted conversation #{markdown_safe(choice)}." if gone
                  else f"Conversation #{markdown_safe(choice)} was already gone.")
        return table, picker, status, "", None

    def export(self, conversation: dict[str, Any] | None, trace: TraceView | None) -> tuple[Any, str]:
        """The conversation as JSON, plus the replay / LaTeX / code of the turn being replayed."""
        if conversation is None:
            raise user_error("Open a conversation first, then export it.")
        files = [export_conversation(self.ctx.export_dir, conversation)]
        preview = ""
        if trace is not None and trace.result is not None:
            title = f"{conversation['kind']} {conversation['id']} {trace.prompt}"[:60]
            answer_files, preview = export_answer(self.ctx.export_dir, trace.result, trace.config, title, trace.prompt,
                                                  trace.model)
            files += answer_files
        return file_list(files), preview
