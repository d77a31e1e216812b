"""Each tab names its outputs once (app/outputs.py OutputNames) and wires its components through
that one list: Chat's CHAT_OUTPUTS (app/chat.py), Sessions' Continue and Recent chats'
RESUME_OUTPUTS (app/resume.py), the Agent tab's AGENT_OUTPUTS and Compare's COMPARE_OUTPUTS. These
tests fail when an event's outputs and those names disagree."""

from __future__ import annotations

import gradio as gr
import pytest

from app import chat_tab
from app.chat import CHAT_OUTPUTS
from app.resume import RESUME_OUTPUTS
from tests.e2e.app_fakes import fake_context

KINDS = {"chatbot": gr.Chatbot, "panel": gr.HTML, "history": gr.State, "conversation_id": gr.State,
         "world": gr.State, "trace": gr.State, "tree": gr.State, "scrubber": gr.Slider, "heatmap": gr.Plot,
         "commits": gr.Plot, "prompt": gr.Textbox, "status": gr.Markdown, "world_page": gr.HTML,
         "keep_end": gr.Button, "preview": gr.HTML, "model": gr.Dropdown, "system": gr.Textbox}


def test_every_chat_event_updates_its_components_in_the_order_of_the_names(tmp_path):
    ctx = fake_context(tmp_path)
    try:
        with gr.Blocks() as demo:
            parts = chat_tab.build(ctx)
        for name in (*CHAT_OUTPUTS, *RESUME_OUTPUTS):
            assert isinstance(parts[name], KINDS[name]), name
        expected = [parts[name]._id for name in CHAT_OUTPUTS]
        turns = [fn for fn in demo.fns.values() if len(fn.outputs) == len(CHAT_OUTPUTS)
                 and any(c._id == parts["chatbot"]._id for c in fn.outputs)]
        assert len(turns) >= 6            # Send, Enter, Regenerate, an edit, the API's chat and regenerate, New chat
        for fn in turns:
            assert [c._id for c in fn.outputs] == expected, fn.name
        resumed = [parts[name]._id for name in RESUME_OUTPUTS]
        opened = [fn for fn in demo.fns.values() if [c._id for c in fn.outputs] == resumed]
        assert opened, "Recent chats' Open fills RESUME_OUTPUTS"
    finally:
        ctx.close()


def _events_updating(demo, outputs) -> list:
    """The page's events whose outputs include any of `outputs`' components."""
    ids = {c._id for c in outputs}
    return [fn for fn in demo.fns.values() if ids & {c._id for c in fn.outputs}]


@pytest.mark.parametrize("tab", ["agent", "compare"])
def test_agent_and_compare_events_update_their_components_in_the_order_of_the_names(tmp_path, tab):
    from app import agent_tab, compare

    module, names, kinds = {
        "agent": (agent_tab, agent_tab.AGENT_OUTPUTS,
                  {"panel": gr.HTML, "steps": gr.HTML, "world": gr.JSON, "verdict": gr.Markdown, "preview": gr.HTML,
                   "files": gr.File, "status": gr.Markdown, "world_page": gr.HTML}),
        "compare": (compare, compare.COMPARE_OUTPUTS,
                    {"panel_diffusion": gr.HTML, "panel_baseline": gr.HTML, "table": gr.HTML, "race": gr.Plot,
                     "status": gr.Markdown}),
    }[tab]
    ctx = fake_context(tmp_path)
    try:
        with gr.Blocks() as demo:
            parts = module.build(ctx)
        assert set(names) == set(kinds)
        for name in names:
            assert isinstance(parts[name], kinds[name]), name
        expected = [c._id for c in names.components(parts)]
        runs = [fn for fn in _events_updating(demo, [parts["panel" if tab == "agent" else "panel_diffusion"]])]
        assert len(runs) >= 2                     # the button and Enter (and the Agent's scenarios)
        for fn in runs:
            assert [c._id for c in fn.outputs] == expected, fn.name
    finally:
        ctx.close()


def test_a_yield_names_only_outputs_of_its_tab():
    from app.agent_tab import AGENT_OUTPUTS
    from app.outputs import OutputNames

    assert AGENT_OUTPUTS.update(status="s")[AGENT_OUTPUTS.index("status")] == "s"
    assert isinstance(AGENT_OUTPUTS.update(status="s")[0], type(gr.skip()))
    with pytest.raises(KeyError, match="chatbot"):
        AGENT_OUTPUTS.update(chatbot=[])
    with pytest.raises(ValueError, match="named twice"):
        OutputNames("a", "b", "a")
