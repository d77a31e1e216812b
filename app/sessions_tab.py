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

from engine.metrics import summary_line
from sessions import StoreError
from sessions.export_schema import MAX_TITLE_CHARS

from .exports import ConversationImportError, export_answer, export_conversation, import_conversation
from .live import REPLAY_MS, TraceView, markdown_safe
from .messages import user_error
from .settings import PACE_MS
from .state import AppContext
from .steps import call_marks, stored_sources
from .trace_panel import play_again, scrub_panel, scrubber_for
from .widgets import PLOT_MIN_WIDTH, file_list

KIND_CHOICES = [("All", "all"), ("Chats", "chat"), ("Comparisons", "compare"), ("Agent runs", "agent"),
                ("API calls", "api")]
LIST_LIMIT = 200


def pace_info() -> str:
    """The replay pace's info line: the value shown is the default; 0 plays at REPLAY_MS."""
    return (f"How long each round stays on screen in a replay: {PACE_MS} ms unless you change it; "
            f"0 plays at {REPLAY_MS} ms (a replay at full speed would be over at once).")


def _label(row: dict[str, Any]) -> str:
    return f"#{row['id']} · {row['kind']} · {' '.join(str(row['title']).split())[:70]}"


def checked_title(title: str | None) -> str:
    """A conversation's new title, its spaces folded; refused with a sentence when empty or too long."""
    title = " ".join((title or "").split())
    if not title:
        raise user_error("The title is empty: type the new title first.")
    if len(title) > MAX_TITLE_CHARS:
        raise user_error(f"A title holds at most {MAX_TITLE_CHARS} characters; this one has {len(title)}.")
    return title


def sessions_table(rows: list[dict[str, Any]], searched: bool) -> str:
    if not rows:
        return '<div class="dp-empty">{}</div>'.format("No match." if searched else "Nothing stored yet.")
    head = ("#", "kind", "title" if not searched else "match", "model", "updated", "turns")
    out = []
    for row in rows:
        text = row.get("snippet") if searched else row["title"]
        cells = (row["id"], row["kind"], text, row.get("model") or "", str(row["updated_at"])[:19].replace("T", " "),
                 row.get("turn_count", ""))
        out.append(Markup("<tr>{}</tr>").format(Markup("").join(Markup("<td>{}</td>").format(c) for c in cells)))
    header = Markup("").join(Markup("<th>{}</th>").format(h) for h in head)
    return str(Markup('<table class="dp-table dp-sessions"><tr>{}</tr>{}</table>').format(header, Markup("").join(out)))


SESSION_COLUMNS = ["#", "kind", "title", "model", "updated", "turns"]


def sessions_frame(rows: list[dict[str, Any]], searched: bool) -> dict[str, Any]:
    """The list as a Dataframe value (plain text cells; a click on a row opens it)."""
    head = [*SESSION_COLUMNS[:2], "match" if searched else "title", *SESSION_COLUMNS[3:]]
    data = [[row["id"], row["kind"], " ".join(str(row.get("snippet") if searched else row["title"]).split()),
             row.get("model") or "", str(row["updated_at"])[:19].replace("T", " "), row.get("turn_count", "")]
            for row in rows]
    return {"headers": head, "data": data or [["", "", "No match." if searched else "Nothing stored yet.", "", "", ""]]}


def transcript_html(conversation: dict[str, Any]) -> str:
    """Every turn in order, with the model, the stats of its generation and its tool calls."""
    parts = [Markup('<div class="dp-meta">{} #{} · {} · {}</div>').format(
        conversation["kind"], conversation["id"], conversation.get("model") or "", conversation["created_at"][:19])]
    for turn in conversation["turns"]:
        notes = []
        if turn["model"]:
            notes.append(turn["model"])
        content = turn["content"]
        if turn["generation"] is not None:
            numbers = turn["generation"].stats
            notes.append(summary_line(numbers, "generation"))          # the labels every view uses (engine/metrics.py)
            if numbers.stop_reason == "cancelled":                     # a value may end mid-id ("P20")
                content += " ✂ cut off by Stop"
        known = stored_sources(conversation, turn["idx"])      # the marks: app/steps.py call_marks
        calls = Markup("").join(Markup('<div class="dp-call">tool call: <code>{}</code> {}{}</div>').format(
            c["name"], json.dumps(c["arguments"], ensure_ascii=False), call_marks(c, known))
            for c in turn["tool_calls"])
        parts.append(Markup('<div class="dp-turn dp-{}"><div class="dp-role">{} {}</div><pre>{}</pre>{}</div>').format(
            turn["role"], turn["role"], " · ".join(notes), content, calls))
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
            return sessions_frame([], False), gr.skip(), markdown_safe(self.ctx.store_problem or "")
        kind = None if kind in (None, "", "all") else kind
        query = (query or "").strip()
        try:
            rows = (self.ctx.store.search(query, kind=kind, limit=LIST_LIMIT) if query
                    else self.ctx.store.list_conversations(kind=kind, limit=LIST_LIMIT))
        except StoreError as exc:
            raise user_error(str(exc)) from None
        choices = [(_label(row), str(row["id"])) for row in rows]
        status = f"{len(rows)} conversation(s)" + (f" matching “{markdown_safe(query)}”." if query else ".")
        return sessions_frame(rows, bool(query)), gr.Dropdown(choices=choices, value=None), status

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

    def open_row(self, evt: gr.SelectData) -> tuple:
        """A click on a row of the list: (picker, transcript, turn picker, conversation state, status)."""
        row = getattr(evt, "row_value", None) or []
        if not row or row[0] in ("", None):
            return (gr.skip(),) * 5
        return (str(row[0]), *self.open(str(row[0])))

    def ask_delete(self, choice: str | None) -> tuple:
        """(confirmation row, its question): nothing is deleted until the person confirms."""
        if not choice:
            raise user_error("Pick the conversation to delete first.")
        return gr.Row(visible=True), (f"Delete conversation #{markdown_safe(str(choice))} with all its turns and "
                                      "traces? This cannot be undone.")

    def show_turn(self, conversation: dict[str, Any] | None, turn_choice: str | None) -> tuple:
        """(trace state, scrubber, panel, heatmap, commits) replaying one stored generation."""
        if conversation is None or turn_choice in (None, ""):
            return None, gr.Slider(visible=False), "", None, None
        turn = next((t for t in conversation["turns"] if str(t["idx"]) == str(turn_choice)), None)
        if turn is None or turn["generation"] is None:
            raise user_error("That turn has no generation trace to replay.")
        prompt = next((t["content"] for t in reversed(conversation["turns"][: turn["idx"]]) if t["role"] == "user"), "")
        view = TraceView.from_result(turn["generation"], turn["config"], turn["model"] or "", prompt)
        view.meta["known"] = stored_sources(conversation, turn["idx"])     # for the replay export's marks
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

    def rename(self, choice: str | None, title: str, kind: str, query: str) -> tuple:
        """Give the picked conversation a new title; (list, picker, status, transcript, conversation)."""
        if not choice:
            raise user_error("Pick the conversation to rename first (click its row).")
        title = checked_title(title)
        store = self._store()
        try:
            store.rename(int(choice), title)
        except (ValueError, TypeError):
            raise user_error(f"'{choice}' is not a conversation number.") from None
        except StoreError as exc:
            raise user_error(str(exc)) from None
        listing, picker, _ = self.refresh(kind, query)
        transcript, _turn, conversation, _ = self.open(str(choice))
        return (listing, gr.Dropdown(choices=picker.choices, value=str(choice)),
                f"Renamed #{markdown_safe(str(choice))} to “{markdown_safe(title)}”.", transcript, conversation)

    def export(self, conversation: dict[str, Any] | None, trace: TraceView | None) -> tuple[Any, str]:
        """The conversation as JSON, plus the replay / LaTeX / code of the turn being replayed."""
        if conversation is None:
            raise user_error("Open a conversation first, then export it.")
        files = [export_conversation(self.ctx.export_dir, conversation)]
        preview = ""
        if trace is not None and trace.result is not None:
            title = f"{conversation['kind']} {conversation['id']} {trace.prompt}"[:60]
            answer_files, preview = export_answer(self.ctx.export_dir, trace.result, trace.config, title, trace.prompt,
                                                  trace.model, known=trace.meta.get("known"))
            files += answer_files
        return file_list(files), preview

    def import_json(self, file: Any, kind: str, query: str) -> tuple:
        """An exported conversation (JSON) stored again as a new conversation, then opened:
        (list, picker, status, transcript, turn picker, conversation state)."""
        if self.ctx.store is None:
            raise user_error(f"Nothing can be imported without the session store: {self.ctx.store_problem}")
        if not file:
            raise user_error("Choose a conversation .json file exported from this app first.")
        path = getattr(file, "name", None) or getattr(file, "path", None) or str(file)
        try:
            cid = import_conversation(self.ctx.store, path)
        except (ConversationImportError, StoreError, ValueError) as exc:
            raise user_error(str(exc)) from None
        listing, picker, _ = self.refresh(kind, query)
        transcript, turn, conversation, _ = self.open(str(cid))
        status = f"Imported as conversation #{cid} ({len(conversation['turns'])} turns)."
        return listing, gr.Dropdown(choices=picker.choices, value=str(cid)), status, transcript, turn, conversation


# -- layout -----------------------------------------------------------------------------------
def build(ctx: AppContext) -> dict[str, Any]:
    """The Sessions tab, inside the caller's gr.Tab; returns the refresh event's pieces (the page
    load lists the sessions once)."""
    sessions = SessionsHandlers(ctx)
    c: dict[str, Any] = {"opened": gr.State(None), "replay_trace": gr.State(None)}
    c.update(_list_and_actions())
    c["status"] = gr.Markdown(elem_id="sessions-status")
    c.update(_transcript_and_replay())
    _wire(sessions, c)
    listing = [c["sessions_list"], c["picker"], c["status"]]
    return {"refresh": (sessions.refresh, [c["kind"], c["query"]], listing), "continue": c["continue_btn"],
            "opened": c["opened"]}


def _list_and_actions() -> dict[str, Any]:
    """The filter and search, the list, the picker and its buttons, the title, the delete question."""
    c: dict[str, Any] = {}
    with gr.Row():
        c["kind"] = gr.Radio(KIND_CHOICES, value="all", label="Show", info="Which kind of stored conversation to list.")
        c["query"] = gr.Textbox(label="Search (full text)", elem_id="session-search",
                                info="Words from any message or title; Enter searches.")
        c["refresh_btn"] = gr.Button("Search / refresh")
    c["sessions_list"] = gr.Dataframe(headers=SESSION_COLUMNS, interactive=False, wrap=True, elem_id="sessions-list",
                                      label="Stored conversations (click a row to open it)", max_height=320)
    with gr.Row():
        c["picker"] = gr.Dropdown([], label="Conversation", allow_custom_value=True, elem_id="session-picker",
                                  scale=4, info="The conversation Open, Delete and Export act on (or click its row).")
        c["open_btn"] = gr.Button("Open")
        c["delete_btn"] = gr.Button("Delete conversation", variant="stop", elem_id="session-delete")
        c["export_btn"] = gr.Button("Export")
        c["import_btn"] = gr.UploadButton("Import JSON", file_types=[".json"], elem_id="session-import")
        c["continue_btn"] = gr.Button("Continue in Chat", variant="primary", elem_id="session-continue")
    with gr.Row(equal_height=False):
        c["title"] = gr.Textbox(label="Title", elem_id="session-title", scale=4, max_length=MAX_TITLE_CHARS,
                                info="The opened conversation's title: change it and press Rename (or Enter).")
        c["rename_btn"] = gr.Button("Rename", elem_id="session-rename", scale=1, min_width=100)
    with gr.Row(visible=False, elem_id="delete-confirm") as confirm_row:
        c["question"] = gr.Markdown(elem_id="delete-question")
        c["confirm_btn"] = gr.Button("Yes, delete it", variant="stop", elem_id="delete-yes")
        c["cancel_btn"] = gr.Button("Cancel", elem_id="delete-cancel")
    c["confirm_row"] = confirm_row
    return c


def _transcript_and_replay() -> dict[str, Any]:
    """The opened transcript beside the replay of one of its generations, its plots and exports."""
    c: dict[str, Any] = {}
    with gr.Row():
        with gr.Column(scale=4):
            c["transcript"] = gr.HTML(elem_id="transcript")
        with gr.Column(scale=5):
            c["turn"] = gr.Dropdown([], label="Generation to replay", allow_custom_value=True,
                                    info="Each answer the model generated in this conversation, with its trace.")
            c["replay_scrubber"] = gr.Slider(1, 2, value=1, step=1, visible=False, label="Replay",
                                             info="Drag to any forward; 0 is the canvas before the first one.")
            with gr.Row(equal_height=False):
                c["pace"] = gr.Slider(0, 1000, value=PACE_MS, step=10, label="Playback pace (ms per round)", scale=4,
                                      info=pace_info())
                c["replay_btn"] = gr.Button("▶ Replay", size="sm", scale=1, min_width=90, elem_id="session-replay")
            c["replay_panel"] = gr.HTML(elem_id="replay-panel")
    with gr.Row():
        c["replay_heatmap"], c["replay_commits"] = gr.Plot(min_width=PLOT_MIN_WIDTH), gr.Plot(min_width=PLOT_MIN_WIDTH)
    c["files"] = gr.File(label="Exports", file_count="multiple", interactive=False, visible=False)
    c["preview"] = gr.HTML()
    return c


def _wire(sessions: SessionsHandlers, c: dict[str, Any]) -> None:
    quiet = {"show_progress": "hidden"}
    kind, query, picker, opened, status = c["kind"], c["query"], c["picker"], c["opened"], c["status"]
    listing = [c["sessions_list"], picker, status]
    c["refresh_btn"].click(sessions.refresh, [kind, query], listing, api_name="sessions_list")
    query.submit(sessions.refresh, [kind, query], listing, api_visibility="private")
    kind.change(sessions.refresh, [kind, query], listing, api_visibility="private")
    opening = [c["transcript"], c["turn"], opened, status]
    c["open_btn"].click(sessions.open, [picker], opening, api_name="sessions_open")
    picker.input(sessions.open, [picker], opening, api_visibility="private")
    c["sessions_list"].select(sessions.open_row, None, [picker, *opening], api_visibility="private", **quiet)
    c["turn"].change(sessions.show_turn, [opened, c["turn"]],
                     [c["replay_trace"], c["replay_scrubber"], c["replay_panel"], c["replay_heatmap"],
                      c["replay_commits"]], api_name="sessions_turn")
    c["replay_scrubber"].input(scrub_panel, [c["replay_trace"], c["replay_scrubber"]], [c["replay_panel"]],
                               trigger_mode="always_last", api_name="sessions_scrub", **quiet)
    confirm_row = c["confirm_row"]
    c["delete_btn"].click(sessions.ask_delete, [picker], [confirm_row, c["question"]], api_visibility="private",
                          **quiet)
    c["cancel_btn"].click(lambda: gr.Row(visible=False), None, [confirm_row], api_visibility="private", **quiet)
    c["confirm_btn"].click(lambda p, k, q: (*sessions.delete(p, k, q), gr.Row(visible=False)), [picker, kind, query],
                           [c["sessions_list"], picker, status, c["transcript"], opened, confirm_row],
                           api_name="sessions_delete")
    c["export_btn"].click(sessions.export, [opened, c["replay_trace"]], [c["files"], c["preview"]],
                          api_name="sessions_export")
    c["import_btn"].upload(sessions.import_json, [c["import_btn"], kind, query], [*listing, *opening[:3]],
                           api_name="sessions_import", **quiet)   # a refusal is the toast alone, no badge per output
    c["replay_btn"].click(play_again, [c["replay_trace"], c["pace"]], [c["replay_panel"], c["replay_scrubber"]],
                          api_visibility="private", **quiet)
    opened.change(lambda conversation: (conversation or {}).get("title", ""), [opened], [c["title"]],
                  api_visibility="private", **quiet)
    renaming = ([picker, c["title"], kind, query], [c["sessions_list"], picker, status, c["transcript"], opened])
    c["rename_btn"].click(sessions.rename, *renaming, api_name="sessions_rename", **quiet)
    c["title"].submit(sessions.rename, *renaming, api_visibility="private", **quiet)
