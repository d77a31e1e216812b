"""The Chat tab: a conversation whose tool calls run against its own world, with the live
denoising panel, Stop, Regenerate, an edit of any sent message (each a new version of its exchange,
the others browsable beside it: app/chat_tree.py), New chat, a scrubber over the last generation,
and its export.

A turn is the agent loop (`world.agent.act`) with plain text allowed as the answer: when the
model writes a tool call, the app runs it on the conversation's world and the model goes on,
until it answers in text or calls `finish`. The turn streams through the one run path
(app/runs.py) and is stored in one exchange. A new chat's world is the held-out background
world with every style stocked (app/conversation_world.py DEFAULT_WORLD), made when the page opens and
shown beside the panel as its web pages (app/world_page.py), which follow each tool call; the
examples name what it holds (conversation_world.world_examples). It is stored with the conversation (its
spec in the meta, every executed call in the turns) and persists across turns. A first message
that is a held-out task's instruction, sent while that world is untouched, opens the task's world
instead (as the API does for a request with no world), and the page shows that one.

"Tools run in" picks where the calls run: on that World in the app (the default), or in its web
pages, through WebMCP in the app's headless browser (app/page_venue.py) under the very page
session the frame shows, so the frame is the page the model acts on (the World the server keeps
for that session is the conversation's own object, so the chat goes on from what the pages did).

Handlers are plain (generator) functions; every streaming update is one tuple of CHAT_OUTPUTS.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.trace import ConfigError, GenerationConfig
from sessions import TurnRecord
from visualizer import extract_code, sandboxed_preview
from world.agent import STOPPED, act
from world.state import World
from world.tools import FINISH, call_tool

from .chat_tree import ChatTree, Version, parse_pick
from .chat_turn import EMPTY_PANEL, ChatTurn
from .conversation_world import (
    DEFAULT_WORLD,
    MAX_REPLIES,
    model_context,
    world_from_spec,
    world_spec_for,
)
from .exports import export_answer
from .keep_end import keep_end_of
from .live import TraceView
from .messages import also_showing, failure, refusal, user_error
from .names import with_names
from .outputs import OutputNames
from .page_venue import PAGES, WORLD, PagesUnavailable
from .runs import Run
from .saving import Exchange, save, title_of
from .settings import read_settings
from .state import AppContext, missing_weights
from .steps import context_messages, step_turns
from .structured import structured_answer
from .trace_panel import scrubber_for
from .warmup import LOADING_PANEL, is_loading
from .watch import Watch
from .widgets import file_list

CHAT_OUTPUTS = OutputNames("chatbot", "panel", "history", "conversation_id", "world", "trace", "tree", "scrubber",
                           "heatmap", "commits", "prompt", "status", "world_page", "keep_end", "preview")
updates = CHAT_OUTPUTS.update           # one tuple of CHAT_OUTPUTS; outputs not named stay as they are
STOP_WAIT_S = 3.0            # New chat waits this long for a running turn to save and end
SEED_RANGE = 2**31 - 1


def page_preview(answer: str | None) -> Any:
    """The preview under the panel: an answer that is an HTML page runs there, in a sandboxed frame
    with no scripts (visualizer.sandboxed_preview), beside its highlighted code in the chat; any
    other answer hides it."""
    kind, code = extract_code(answer or "")
    shown = kind == "html"
    return gr.HTML(value=sandboxed_preview(code) if shown else "", visible=shown)


# -- the conversation's world -----------------------------------------------------------------
def stored_world(conversation: Mapping[str, Any]) -> World:
    """A stored chat's world as its last turn left it: the spec in its meta, then every call that
    ran, in order (vetoed, unparsed and finish calls changed nothing)."""
    world = world_from_spec(conversation["meta"].get("world") or DEFAULT_WORLD)
    for turn in conversation["turns"]:
        for call in turn["tool_calls"]:
            if call["error_type"] is None and call["name"] not in (FINISH, "(unparsed)"):
                try:
                    call_tool(world, call["name"], call["arguments"])
                except Exception:  # noqa: BLE001 - it failed in the turn too, and changed nothing
                    pass
    return world


def named_answers(entries: list[dict[str, Any]], world: World, structured: bool) -> list[dict[str, Any]]:
    """The turn's answers as shown, with the world's name beside each id they mention (app/names.py);
    what the model reads back (`content`) stays as it wrote it."""
    if structured:
        return entries
    return [{**e, "shown": with_names(e["shown"], world)}
            if e["role"] == "assistant" and not e.get("title") and e.get("shown") else e for e in entries]


def untouched(world: World) -> bool:
    """Whether `world` is still a new chat's world as made (nothing bought, booked or changed by hand)."""
    return world.end_state() == world_from_spec(DEFAULT_WORLD).end_state()


@dataclass
class TurnAsk:
    """What one turn is asked to do: the message, the chat's state as the page holds it, and the
    person's choices beside the generation settings."""

    message: str
    history: list[dict[str, Any]] | None
    conversation_id: int | None
    world: World | None
    tree: ChatTree | None               # the chat's versions (None: the history is all there is)
    model: str
    system: str
    random_seed: bool
    regenerating: bool = False          # the message answered again (its earlier answers kept)
    where: str = WORLD                  # where the tool calls run: the World in the app, or its web pages
    depth: int | None = None            # the exchange this turn is a new version of (None: a new exchange)

    def chat(self) -> ChatTree:
        """The chat as a tree: the page's, or one made from the history (a chat continued from Sessions)."""
        return self.tree if self.tree is not None else ChatTree.linear(list(self.history or []), self.world)


class ChatHandlers:
    def __init__(self, ctx: AppContext, updates_per_second: float = 20.0) -> None:
        self.ctx = ctx
        self.updates_per_second = updates_per_second

    def page(self, key: tuple, world: World, step: Any = None, in_pages: bool = False) -> str:
        """The frame showing `world` as its web pages, on the page of `step`'s tool call if any.
        in_pages: the calls run in the pages, whose session holds `world` already: the frame reads
        it as they left it."""
        call = step.call if step is not None and step.error is None else None
        result = step.observation if call else None
        if in_pages:
            return self.ctx.world_pages.frame(key, call, result)
        return self.ctx.world_pages.show(key, world, call, result)

    def world_view(self, world: World | None, key: tuple) -> tuple[World, str]:
        """(world, frame): the tab's world (a new chat's when there is none yet) and its pages."""
        world = world if world is not None else world_from_spec(DEFAULT_WORLD)
        return world, self.page(key, world)

    # -- one turn -----------------------------------------------------------------------------
    def submit(self, message: str, history: list[dict[str, Any]] | None, conversation_id: int | None,
               world: World | None, tree: ChatTree | None, model: str, system: str, random_seed: bool,
               where: str = WORLD, *, settings: Mapping[str, Any],
               key: tuple = (None, "chat")) -> Generator[tuple, None, None]:
        """Answer `message`; yields one tuple of CHAT_OUTPUTS per update, the last one complete. The
        page empties the message box when it sends (SEND_JS): a message queued behind a running answer
        must not empty the box when its turn comes, as it may hold the next message by then."""
        yield from self._turn(TurnAsk(message, history, conversation_id, world, tree, model, system, random_seed,
                                      where=where), settings, key)

    def regenerate(self, history: list[dict[str, Any]] | None, conversation_id: int | None, world: World | None,
                   tree: ChatTree | None, model: str, system: str, random_seed: bool, where: str = WORLD,
                   *, settings: Mapping[str, Any], key: tuple = (None, "chat")) -> Generator[tuple, None, None]:
        """Answer the last message again, as a new version beside the earlier answers (they stay
        browsable, and stored). With temperature > 0 a new seed is drawn."""
        ask = TurnAsk("", history, conversation_id, world, tree, model, system, random_seed, regenerating=True,
                      where=where)
        path = ask.chat().path()
        if not path or not path[-1].shown.entries:
            raise user_error("There is no answer to regenerate yet: send a message first.")
        ask.message, ask.depth = path[-1].shown.user["content"], len(path) - 1
        yield from self._turn(ask, settings, key)

    def edit(self, edited: tuple[int, str] | None, history: list[dict[str, Any]] | None, conversation_id: int | None,
             world: World | None, tree: ChatTree | None, model: str, system: str, random_seed: bool,
             where: str = WORLD, *, settings: Mapping[str, Any],
             key: tuple = (None, "chat")) -> Generator[tuple, None, None]:
        """A sent message edited in the chat (`edited`: the Chatbot's message index and the new
        text): answered as a new version of its exchange, a branch from the world before it; the
        old message, its answer and what followed stay browsable beside it."""
        ask = TurnAsk("", history, conversation_id, world, tree, model, system, random_seed, where=where)
        index, text = edited if edited else (-1, "")
        try:
            ask.depth = ask.chat().exchange_of(int(index))
        except (IndexError, ValueError):
            raise user_error("That message is no longer in the chat: edit one that is shown.") from None
        ask.message = text if isinstance(text, str) else str(text or "")
        yield from self._turn(ask, settings, key)

    def _turn(self, ask: TurnAsk, settings: Mapping[str, Any], key: tuple) -> Generator[tuple, None, None]:
        """The turn; refused before anything is drawn (bad settings, a prompt too long), the message goes
        back into the box the page emptied as it sent (SEND_JS), so nothing typed is lost."""
        drawn = False
        turn = self._run_turn(ask, settings, key)
        try:
            for update in turn:
                drawn = True
                yield update
        except gr.Error as error:
            shows: dict[str, Any] = {}
            if not drawn and not ask.regenerating and ask.depth is None and (ask.message or "").strip():
                shows["prompt"] = ask.message
            if not drawn and ask.depth is not None:        # an edit refused: the chat as it was shown
                shows["chatbot"] = ask.chat().messages()
            raise also_showing(error, **shows) from None
        finally:
            turn.close()                 # a closed handler (a client's cancel) closes the turn, which saves

    def _run_turn(self, ask: TurnAsk, settings: Mapping[str, Any], key: tuple) -> Generator[tuple, None, None]:
        message, conversation_id, world = ask.message or "", ask.conversation_id, ask.world
        model, system = ask.model, ask.system
        tree = ask.chat()
        path = tree.path()
        depth = len(path) if ask.depth is None else ask.depth
        if depth < len(path) and path[depth].shown.before is not None:    # a new version: from the world before it
            world = path[depth].shown.before.clone()
        read, config = self._settings(ask, settings)
        history = [dict(m) for m in tree.history(depth)]
        spec, world = self._start_world(world, history, message)
        before = world.clone()
        system = (system or "").strip()
        user = {"role": "user", "content": message}
        context = ([{"role": "system", "content": system}] if system else []) + context_messages(history + [user])
        run = Run(self.ctx.runs, key, read.pace_ms, self.updates_per_second)
        with run:
            turn = ChatTurn(run, config, model, message, history, user, structured=read.structured,
                            system=system, in_pages=ask.where == PAGES and not read.structured,
                            shown_before=tree.messages(depth))
            run.parts = turn.part_count
            watch = yield from self._stream(run, turn, world, context, conversation_id, spec, system)
            if run.discarded:                        # New chat came: the run is saved, the page moved on
                return
            ended = watch.ended
            answer, early = ended.value if ended is not None and ended.value else (None, "")
            if early == STOPPED:
                turn.stop()
            elif early and not turn.steps:
                # the prompt alone outgrew the context: nothing ran, so the chat goes back to where it
                # was and the message back into the box (the page emptied it as it sent)
                # and the offer to cut it to the end that fits; all with the sentence (Refusal)
                offer = dict(prompt=message, keep_end=gr.Button(visible=True)) if ask.depth is None else {}
                raise refusal(early, chatbot=tree.messages(), panel=EMPTY_PANEL, **offer)
            conversation_id = watch.save()
            entries = named_answers(turn.entries(answer, early), world, turn.structured)
            panel = turn.final_panel()
            tree = tree.answered(depth, Version(user, tuple(entries), before, world.clone(),
                                                config.seed if config.temperature > 0 else None, turn.view, panel,
                                                answer or ""))
            final = dict(chatbot=tree.messages(), panel=panel, history=tree.history(),
                         conversation_id=conversation_id, world=world, trace=turn.view, tree=tree,
                         scrubber=scrubber_for(turn.view) if turn.view.frames else gr.skip(),
                         status=turn.status(config, conversation_id, run.stop_requested),
                         keep_end=gr.Button(visible=False), preview=page_preview(answer))
            if not turn.view.frames:
                yield updates(**final)
                return
            if run.stop_requested:       # "Stopped" first: a long answer's plots take a while to build
                yield updates(**final)
            heatmap, commits = turn.view.plots()
            yield updates(**final, heatmap=heatmap, commits=commits)

    def _settings(self, ask: TurnAsk, settings: Mapping[str, Any]) -> tuple[Any, GenerationConfig]:
        """(the tab's settings read, the turn's config with its seed), or the sentence saying why the
        turn cannot run, before anything is drawn."""
        if not (ask.message or "").strip():
            raise user_error("The prompt is empty: type a message for the model first.")
        missing = missing_weights(self.ctx.registry, ask.model)
        if missing:                                  # before the panel could promise a load
            raise user_error(missing)
        if ask.where not in (WORLD, PAGES):
            raise user_error(f"Tools run in the built-in world or in its web pages, not '{ask.where}'.")
        try:
            read = read_settings(settings)
            config = read.config
            if ask.random_seed or (ask.regenerating and config.temperature > 0):
                config = config.replace(seed=secrets.randbelow(SEED_RANGE))
        except ConfigError as exc:
            raise user_error(str(exc)) from None
        return read, config

    @staticmethod
    def _start_world(world: World | None, history: list[dict[str, Any]], message: str,
                     ) -> tuple[dict[str, Any] | None, World]:
        """(the spec of a world the turn opens, or None; the world it acts in). A first message
        that is a held-out task's instruction opens that task's world (the page beside the panel
        then shows it); any other keeps the world already shown."""
        if world is None or (not history and untouched(world)):
            found = world_spec_for(message)
            if world is None or "task_id" in found:
                return found, world_from_spec(found)
        return None, world

    def _stream(self, run: Run, turn: ChatTurn, world: World, context: list[dict[str, str]],
                conversation_id: int | None, spec: dict[str, Any] | None, system: str) -> Generator[tuple, None, Watch]:
        """The turn's live updates; returns its Watch (its last event, and its one save). Closed
        early (a client's cancel) or discarded (New chat), it saves what was decided."""
        config, model, in_pages = turn.config, turn.model, turn.in_pages

        def keep(cut: bool) -> int | None:
            if cut:
                turn.stop()
            return self._save(turn, conversation_id, spec, system) if cut or turn.steps else conversation_id

        watch = Watch(run, turn.read_frame, turn.read_step, keep)
        try:
            with ExitStack() as held:
                # the browser first: when it cannot run the pages, no weights are loaded for nothing
                page_tools = held.enter_context(self.ctx.page_browser.visit(run.key)).episode({}, world) \
                    if in_pages else None
                turn.webmcp = self.ctx.page_browser.webmcp if in_pages else ""
                if is_loading(self.ctx, model):                # the first use waits for weights: say so
                    yield updates(panel=LOADING_PANEL, status="")
                backend = held.enter_context(self.ctx.registry.using(model))
                turn.backend = backend
                context = model_context(backend, context)
                if turn.structured:                        # one answer in the schema's JSON, no tool calls
                    run.start(lambda r: structured_answer(backend, context, config, on_step=lambda s: r.put("step", s),
                                                          on_frame=r.frame, should_stop=r.should_stop),
                              name="chat-turn")
                else:
                    run.start(lambda r: act(backend, world, context, config, max_replies=MAX_REPLIES,
                                            text_answers=True, on_step=lambda s: r.put("step", s),
                                            on_frame=r.frame, should_stop=r.should_stop, page_tools=page_tools),
                              name="chat-turn")
                yield updates(chatbot=turn.chatbot(), panel=EMPTY_PANEL, status="", scrubber=gr.Slider(visible=False),
                              heatmap=None, commits=None, world_page=self.page(run.key, world, in_pages=in_pages))
                with watch:
                    for event in watch.events():
                        if event.kind == "frame" and event.show:
                            yield updates(chatbot=turn.chatbot(), trace=turn.view,
                                          panel=turn.view.panel(run.mode(), part=(event.part, event.parts),
                                                                behind=run.behind()))
                        elif event.kind == "step" and not run.stop_requested:
                            called = event.value.call is not None and event.value.call["name"] != FINISH
                            yield updates(chatbot=turn.chatbot(), trace=turn.view,
                                          **({"world_page": self.page(run.key, world, event.value, in_pages)}
                                             if called else {}))
        except gr.Error:
            raise
        except PagesUnavailable as exc:
            raise user_error(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - every failure reaches the person as a sentence
            raise failure(exc) from None
        if run.discarded:
            watch.save(cut=True)
        return watch

    def keep_end(self, message: str, tree: ChatTree | None, history: list[dict[str, Any]] | None, model: str,
                 system: str, *, settings: Mapping[str, Any], key: tuple = (None, "chat")) -> tuple[str, str, Any]:
        """(box, status, the button): the message in the box cut to the end that fits the model's
        context after this chat (app/keep_end.py), to be read and sent; the button hides."""
        chat = tree if tree is not None else ChatTree.linear(list(history or []), None)
        system = (system or "").strip()
        before = ([{"role": "system", "content": system}] if system else []) + context_messages(chat.history())
        try:
            gen_length = read_settings(settings).config.gen_length
        except ConfigError as exc:
            raise user_error(str(exc)) from None
        kept = keep_end_of(self.ctx, model, message or "", before, gen_length)
        cut = len(message or "") - len(kept)
        return kept, (f"Kept the last {len(kept):,} characters of the message ({cut:,} cut from its start): "
                      "read it, then send it."), gr.Button(visible=False)

    # -- versions, new ------------------------------------------------------------------------
    def show_version(self, pick: str, tree: ChatTree | None) -> tuple:
        """The page's pick of an answer's arrow ("depth:delta", app/chat_tree.py): that exchange's
        previous or next version shown, with the branch that follows it, its world (the model's
        context follows it) and its answer's panel, trace and page preview. (chatbot, history,
        world, tree, trace, panel, scrubber, preview)"""
        picked = parse_pick(pick)
        if tree is None or picked is None:
            return (gr.skip(),) * 8
        tree = tree.moved(*picked)
        last = tree.path()[-1].shown
        trace = last.trace
        scrubber = scrubber_for(trace) if trace is not None and trace.frames else gr.Slider(visible=False)
        world = last.after.clone() if last.after is not None else gr.skip()
        return (tree.messages(), tree.history(), world, tree, trace, last.panel or EMPTY_PANEL, scrubber,
                page_preview(last.answer))

    def new_chat(self, key: tuple = (None, "chat")) -> tuple:
        """Everything back to empty: the next message starts a new conversation, a new world and a
        new model context. A run still going is stopped and saved first (and draws nothing more)."""
        self.ctx.runs.stop(key, discard=True, wait_s=STOP_WAIT_S)
        world, page = self.world_view(None, key)
        return updates(chatbot=[], panel=EMPTY_PANEL, history=[], conversation_id=None, world=world, trace=None,
                       world_page=page,
                       tree=None, scrubber=gr.Slider(visible=False), heatmap=None, commits=None,
                       status="Started a new conversation.", keep_end=gr.Button(visible=False),
                       preview=page_preview(None))

    # -- after a run --------------------------------------------------------------------------
    def export(self, trace: TraceView | None) -> tuple[Any, str]:
        """Files for the last answer (replay, LaTeX, its code) and an HTML preview when it is a page."""
        if trace is None or trace.result is None:
            raise user_error("There is no finished answer to export yet: run a generation first.")
        title = " ".join(trace.prompt.split())[:60] or "answer"
        files, preview = export_answer(self.ctx.export_dir, trace.result, trace.config, title, trace.prompt,
                                       trace.model, known=trace.meta.get("known"))
        return file_list(files), preview

    def _save(self, turn: ChatTurn, conversation_id: int | None, spec: dict[str, Any] | None, system: str
              ) -> int | None:
        meta = {"system": system, "config": turn.config.to_dict(), "world": spec or DEFAULT_WORLD,
                "tools_in": PAGES if turn.in_pages else WORLD,
                **({"webmcp": turn.webmcp} if turn.in_pages else {})}
        exchange = Exchange("chat", title_of(turn.prompt), turn.model, meta=meta, conversation_id=conversation_id,
                            turns=[TurnRecord("user", turn.prompt), *step_turns(turn.steps, turn.config, turn.model)])
        return save(self.ctx, exchange)


