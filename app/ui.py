"""The Gradio page: layout and event wiring only. Every handler lives in its tab's module and is
a plain (generator) function; `build_app(ctx)` connects them to components."""

from __future__ import annotations

from typing import Any

import gradio as gr

from .agent_tab import AgentHandlers
from .chat import EMPTY_PANEL, ChatHandlers, scrub_panel
from .compare import FAIRNESS_NOTE, CompareHandlers
from .css import CSS
from .live import markdown_safe
from .models_tab import ModelsHandlers
from .sessions_tab import KIND_CHOICES, SessionsHandlers
from .settings import AGENT_DEFAULTS, DEFAULTS, RANGES, SAMPLER_CHOICES
from .state import AppContext

GENERATE = {"concurrency_id": "generate", "concurrency_limit": 1, "show_progress": "hidden"}
QUIET = {"show_progress": "hidden"}
MODEL_POLL_S = 3.0
INTRO = ("# Diffusion Playground\nWatch a diffusion language model decide its answer, round by round: "
         "masked cells turn into tokens, several per forward.")


def launch_kwargs() -> dict[str, Any]:
    """What Gradio 6 takes at launch() rather than Blocks(): the CSS; no analytics, no share link."""
    return {"css": CSS, "share": False, "ssr_mode": False}


def _slider(name: str, label: str, value: Any, **kw: Any) -> gr.Slider:
    low, high, step = RANGES[name]
    return gr.Slider(low, high, value=value, step=step, label=label, **kw)


def generation_controls(prefix: str, defaults: dict[str, Any], with_sampling: bool = True) -> list[gr.Component]:
    """[gen_length, block_size, steps, sampler, threshold] + [temperature, seed] when with_sampling;
    elem_ids are `{prefix}-gen-length` and so on."""
    with gr.Row():
        controls = [_slider("gen_length", "Generation length (tokens)", defaults["gen_length"],
                            elem_id=f"{prefix}-gen-length"),
                    _slider("block_size", "Block size", defaults["block_size"], elem_id=f"{prefix}-block-size"),
                    _slider("steps", "Steps per block", defaults["steps"], elem_id=f"{prefix}-steps")]
    with gr.Row():
        controls += [gr.Dropdown(SAMPLER_CHOICES, value=defaults["sampler"], label="Sampler",
                                 elem_id=f"{prefix}-sampler"),
                     _slider("threshold", "Threshold (threshold samplers)", defaults["threshold"],
                             elem_id=f"{prefix}-threshold")]
        if with_sampling:
            controls += [_slider("temperature", "Temperature (0 = greedy)", defaults["temperature"],
                                 elem_id=f"{prefix}-temperature"),
                         gr.Number(defaults["seed"], precision=0, label="Seed", elem_id=f"{prefix}-seed")]
    return controls


def _model_picker(choices: list[tuple[str, str]], value: str, label: str, elem_id: str) -> gr.Dropdown:
    return gr.Dropdown(choices=choices, value=value, label=label, allow_custom_value=True, elem_id=elem_id,
                       info="A preset, a folder under models/, or a path.")


def build_app(ctx: AppContext) -> gr.Blocks:
    chat, compare, agent = ChatHandlers(ctx), CompareHandlers(ctx), AgentHandlers(ctx)
    sessions, models = SessionsHandlers(ctx), ModelsHandlers(ctx)
    registry = ctx.registry
    with gr.Blocks(title="Diffusion Playground", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        gr.Markdown("\n\n".join(f"⚠️ {markdown_safe(n)}" for n in ctx.notices), visible=bool(ctx.notices),
                    elem_id="notices", elem_classes=["dp-notice"])
        with gr.Tabs():
            # ---------------------------------------------------------------- Chat
            with gr.Tab("Chat", id="chat"):
                history, conversation_id, trace = gr.State([]), gr.State(None), gr.State(None)
                with gr.Row():
                    with gr.Column(scale=5):
                        chatbot = gr.Chatbot(label="Conversation", height=440, elem_id="chatbot", allow_tags=False,
                                             sanitize_html=True, feedback_options=None)
                        prompt = gr.Textbox(label="Message", placeholder="Ask something, then press Enter or Send",
                                            lines=2, elem_id="prompt")
                        with gr.Row():
                            send_btn = gr.Button("Send", variant="primary", elem_id="send")
                            stop_btn = gr.Button("Stop", variant="stop", elem_id="stop")
                            regen_btn = gr.Button("Regenerate", elem_id="regenerate")
                            edit_btn = gr.Button("Edit last", elem_id="edit-last")
                            new_btn = gr.Button("New chat", elem_id="new-chat")
                        chat_status = gr.Markdown(elem_id="chat-status")
                    with gr.Column(scale=6):
                        panel = gr.HTML(EMPTY_PANEL, label="Live denoising", elem_id="live-panel")
                        scrubber = gr.Slider(1, 2, value=1, step=1, visible=False, label="Replay", elem_id="scrubber")
                        chat_model = _model_picker(registry.choices(), ctx.default_model, "Model", "chat-model")
                        system = gr.Textbox(label="System prompt (optional)", lines=1)
                        with gr.Accordion("Generation settings", open=True):
                            chat_controls = generation_controls("chat", DEFAULTS)
                        with gr.Row():
                            export_btn = gr.Button("Export answer (HTML replay, LaTeX, code)", elem_id="export")
                        export_files = gr.File(label="Exports", file_count="multiple", elem_id="exports",
                                               interactive=False, visible=False)
                        export_preview = gr.HTML(elem_id="export-preview")
                with gr.Row():
                    heatmap = gr.Plot(label="When each token was decided")
                    commits = gr.Plot(label="Commits per forward")
                chat_inputs = [prompt, history, conversation_id, chat_model, system, *chat_controls]
                chat_outputs = [chatbot, panel, history, conversation_id, trace, scrubber, heatmap, commits, prompt,
                                chat_status]
                send = send_btn.click(chat.submit, chat_inputs, chat_outputs, api_name="chat", **GENERATE)
                enter = prompt.submit(chat.submit, chat_inputs, chat_outputs, api_visibility="private", **GENERATE)
                regen = regen_btn.click(chat.regenerate, chat_inputs[1:], chat_outputs, api_name="regenerate",
                                        **GENERATE)
                # Cancel first (its own listener, so nothing waits for it), then draw what the run kept.
                stop_btn.click(None, None, None, cancels=[send, enter, regen])
                stop_btn.click(chat.stopped, [trace], [panel, scrubber, heatmap, commits, chat_status],
                               api_visibility="private", **QUIET)
                edit_btn.click(chat.edit_last, [history], [prompt, history, chatbot], api_visibility="private")
                new_btn.click(None, None, None, cancels=[send, enter, regen])
                new_btn.click(chat.new_chat, None, chat_outputs, api_visibility="private")
                scrubber.input(scrub_panel, [trace, scrubber], [panel], trigger_mode="always_last",
                               api_visibility="private", **QUIET)
                export_btn.click(chat.export, [trace], [export_files, export_preview], api_name="export")

            # ---------------------------------------------------------------- Compare
            with gr.Tab("Compare", id="compare"):
                gr.Markdown(FAIRNESS_NOTE, elem_id="fairness")
                cmp_prompt = gr.Textbox(label="Prompt for both models", lines=2, elem_id="compare-prompt")
                with gr.Row():
                    cmp_diffusion = _model_picker(registry.choices(("diffusion",)), ctx.default_model,
                                                  "Diffusion model", "compare-diffusion")
                    cmp_baseline = _model_picker(registry.choices(("autoregressive",)), ctx.baseline_model,
                                                 "AR baseline", "compare-baseline")
                cmp_controls = generation_controls("compare", DEFAULTS)
                with gr.Row():
                    race_btn = gr.Button("Race", variant="primary", elem_id="race")
                    race_stop = gr.Button("Stop", variant="stop")
                with gr.Row():
                    cmp_panel_a = gr.HTML(EMPTY_PANEL, label="Diffusion", elem_id="compare-diffusion-panel")
                    cmp_panel_b = gr.HTML(EMPTY_PANEL, label="AR baseline", elem_id="compare-baseline-panel")
                cmp_table = gr.HTML(elem_id="compare-table")
                race = gr.Plot(label="Tokens decided over time")
                cmp_status = gr.Markdown()
                racing = race_btn.click(compare.run, [cmp_prompt, cmp_diffusion, cmp_baseline, *cmp_controls],
                                        [cmp_panel_a, cmp_panel_b, cmp_table, race, cmp_status], api_name="compare",
                                        **GENERATE)
                race_stop.click(None, None, None, cancels=[racing])

            # ---------------------------------------------------------------- Agent
            with gr.Tab("Agent", id="agent"):
                with gr.Row():
                    task = gr.Dropdown(agent.task_choices(), value="", label="Benchmark task (held out)",
                                       allow_custom_value=True, elem_id="agent-task")
                    agent_model = _model_picker(registry.choices(), ctx.default_model, "Model", "agent-model")
                instruction = gr.Textbox(label="Instruction", lines=2, elem_id="agent-instruction",
                                         placeholder="Pick a task above, or type an instruction for the agent")
                with gr.Accordion("Generation settings", open=False):
                    max_steps = gr.Slider(1, 16, value=8, step=1, label="Step limit")
                    agent_controls = generation_controls("agent", AGENT_DEFAULTS, with_sampling=False)
                with gr.Row():
                    agent_btn = gr.Button("Run agent", variant="primary", elem_id="run-agent")
                    agent_stop = gr.Button("Stop", variant="stop")
                agent_status = gr.Markdown()
                with gr.Row():
                    with gr.Column(scale=3):
                        agent_panel = gr.HTML(EMPTY_PANEL, label="Denoising of the current tool call",
                                              elem_id="agent-panel")
                        agent_steps = gr.HTML(label="Steps", elem_id="agent-steps")
                    with gr.Column(scale=2):
                        verdict = gr.Markdown(elem_id="agent-verdict")
                        world = gr.JSON(label="World state (cart, orders, invoices)")
                agent_preview = gr.HTML(elem_id="agent-preview")
                agent_files = gr.File(label="Answer files", file_count="multiple", interactive=False, visible=False)
                task.change(agent.describe, [task], [instruction], api_visibility="private", **QUIET)
                running = agent_btn.click(agent.run, [task, instruction, agent_model, max_steps, *agent_controls],
                                          [agent_panel, agent_steps, world, verdict, agent_preview, agent_files,
                                           agent_status], api_name="agent", **GENERATE)
                agent_stop.click(None, None, None, cancels=[running])

            # ---------------------------------------------------------------- Sessions
            with gr.Tab("Sessions", id="sessions") as sessions_tab:
                opened, replay_trace = gr.State(None), gr.State(None)
                with gr.Row():
                    kind = gr.Radio(KIND_CHOICES, value="all", label="Show")
                    query = gr.Textbox(label="Search (full text)", elem_id="session-search")
                    refresh_btn = gr.Button("Search / refresh")
                sessions_list = gr.HTML(elem_id="sessions-list")
                with gr.Row():
                    picker = gr.Dropdown([], label="Conversation", allow_custom_value=True, elem_id="session-picker")
                    open_btn = gr.Button("Open")
                    delete_btn = gr.Button("Delete conversation", variant="stop")
                    session_export = gr.Button("Export")
                sessions_status = gr.Markdown()
                with gr.Row():
                    with gr.Column(scale=4):
                        transcript = gr.HTML(elem_id="transcript")
                    with gr.Column(scale=5):
                        turn = gr.Dropdown([], label="Generation to replay", allow_custom_value=True)
                        replay_scrubber = gr.Slider(1, 2, value=1, step=1, visible=False, label="Replay")
                        replay_panel = gr.HTML(elem_id="replay-panel")
                with gr.Row():
                    replay_heatmap, replay_commits = gr.Plot(), gr.Plot()
                session_files = gr.File(label="Exports", file_count="multiple", interactive=False, visible=False)
                session_preview = gr.HTML()
                listing = [sessions_list, picker, sessions_status]
                refresh_btn.click(sessions.refresh, [kind, query], listing, api_name="sessions_list")
                query.submit(sessions.refresh, [kind, query], listing, api_visibility="private")
                kind.change(sessions.refresh, [kind, query], listing, api_visibility="private")
                sessions_tab.select(sessions.refresh, [kind, query], listing, api_visibility="private")
                opening = [transcript, turn, opened, sessions_status]
                open_btn.click(sessions.open, [picker], opening, api_name="sessions_open")
                picker.input(sessions.open, [picker], opening, api_visibility="private")
                turn.change(sessions.show_turn, [opened, turn],
                            [replay_trace, replay_scrubber, replay_panel, replay_heatmap, replay_commits],
                            api_name="sessions_turn")
                replay_scrubber.input(scrub_panel, [replay_trace, replay_scrubber], [replay_panel],
                                      trigger_mode="always_last", api_name="sessions_scrub", **QUIET)
                delete_btn.click(sessions.delete, [picker, kind, query],
                                 [sessions_list, picker, sessions_status, transcript, opened],
                                 api_name="sessions_delete")
                session_export.click(sessions.export, [opened, replay_trace], [session_files, session_preview],
                                     api_name="sessions_export")

            # ---------------------------------------------------------------- Models
            with gr.Tab("Models", id="models"):
                gr.Markdown("Presets and every folder under `models/`. The folder is watched: a new or updated "
                            "checkpoint (for example one a training run writes) shows up here and in every "
                            "model picker within seconds, and the next run loads the new weights.")
                with gr.Row():
                    load_name = gr.Textbox(label="Load a model now (name or path)", elem_id="load-name")
                    load_btn = gr.Button("Load")
                    rescan_btn = gr.Button("Rescan")
                models_status = gr.Markdown()
                table = gr.HTML(models.table(), elem_id="models-table")
                version = gr.State(registry.version)
                pickers = [chat_model, cmp_diffusion, cmp_baseline, agent_model]
                load_btn.click(models.try_load, [load_name], [models_status], api_name="models_load")
                rescan_btn.click(models.rescan, None, [table, *pickers, version, models_status],
                                 api_name="models_rescan")
                gr.Timer(MODEL_POLL_S).tick(models.poll, [version], [table, *pickers, version, models_status],
                                            api_visibility="private", **QUIET)
        demo.load(sessions.refresh, [kind, query], listing, api_visibility="private")
    return demo
