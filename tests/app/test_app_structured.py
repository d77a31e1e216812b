"""Chat's "JSON schema" box and the Agent tab's "scaffolded" mode, called as plain handlers with
fake backends: a schema that cannot be one is a sentence (never a traceback), a filled schema
makes the answer JSON that follows it, shown formatted, with the scaffold's cells drawn as
pre-filled; the Agent's and Compare's switches reach the run's config (Compare's AR side then
jumps forward)."""

from __future__ import annotations

import json

import gradio as gr
import pytest

from app.agent_tab import AgentHandlers
from app.chat import CHAT_OUTPUTS, ChatHandlers
from app.compare import CompareHandlers
from app.sessions_tab import SessionsHandlers
from app.structured import EXAMPLE_PROMPT, EXAMPLE_SCHEMA, EXAMPLE_TEXT, load_example, parse_schema, shown_json
from engine.trace import ConfigError, GenerationConfig
from tests.e2e.app_fakes import fake_context
from tests.fakes import FakeDiffusionBackend
from tests.scaffold_models import RandomLogits
from tests.world.scripted import oracle_target, world_format
from world.tasks import make_task

OUT = {name: i for i, name in enumerate(CHAT_OUTPUTS)}
SETTINGS = {"gen_length": 64, "block_size": 16, "steps": 8, "sampler": "threshold", "threshold": 0.9,
            "temperature": 0.0, "seed": 0}
SMALL_SCHEMA = {"type": "object", "properties": {"size": {"enum": ["S", "M", "L"]}, "gift": {"type": "boolean"}},
                "required": ["size", "gift"]}


@pytest.fixture
def ctx(tmp_path):
    context = fake_context(tmp_path)
    yield context
    context.close()


def ask(chat: ChatHandlers, message: str, schema: str, model: str = "fake-bd") -> list[tuple]:
    return list(chat.submit(message, [], None, None, None, model, "", False, settings={**SETTINGS, "schema": schema}))


def final(updates: list[tuple]) -> list:
    """Each output's last value that was not a skip: what the page shows at the end."""
    shown = list(updates[-1])
    for update in reversed(updates):
        for i, value in enumerate(update):
            if shown[i] == gr.skip() and value != gr.skip():
                shown[i] = value
    return shown


# -- the box's text -----------------------------------------------------------------------------
def test_an_empty_box_means_a_free_answer_and_the_example_is_a_schema_the_engine_takes():
    assert parse_schema("") is None and parse_schema("  \n ") is None and parse_schema(None) is None
    assert parse_schema(EXAMPLE_TEXT) == EXAMPLE_SCHEMA
    assert GenerationConfig(schema=EXAMPLE_SCHEMA).scaffolded
    assert EXAMPLE_PROMPT and len(EXAMPLE_TEXT.splitlines()) <= 12        # fits the box without scrolling


@pytest.mark.parametrize("text, words", [
    ('{"type": "object", ', "not valid JSON"),
    ("{'type': 'object'}", "line 1, column 2"),
    ('["a", "b"]', "got an array"),
    ('"object"', "got a string"),
    ('{"title": "no shape"}', 'give it a "type"'),
    ("[" * 5000, "nested too deeply"),
], ids=["cut-short", "single-quotes", "array", "string", "no-type", "deep"])
def test_a_box_that_is_not_a_schema_is_a_sentence(text, words):
    with pytest.raises(ConfigError, match=words) as caught:
        parse_schema(text)
    assert str(caught.value).endswith(".") and "Traceback" not in str(caught.value)


@pytest.mark.parametrize("length, block, expected", [(64, 16, 128), (256, 16, 256), ("", 16, 128), (96, 12, 132)],
                         ids=["raised", "kept", "empty", "a-multiple-of-the-block"])
def test_loading_the_example_fills_schema_and_prompt_and_makes_room_for_its_answer(length, block, expected):
    assert load_example(length, block) == (EXAMPLE_TEXT, EXAMPLE_PROMPT, expected)


def test_the_answer_is_shown_as_formatted_json_or_said_not_to_be_json():
    assert shown_json('{"size":"M","gift":false}') == '```json\n{\n  "size": "M",\n  "gift": false\n}\n```'
    assert shown_json('{"size": ').endswith("(This answer is not valid JSON.)")


# -- Chat ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema, words", [
    ("{not json", "not valid JSON"),
    ('{"type": "object", "patternProperties": {"^x": {"type": "string"}}}', "patternProperties"),
], ids=["not-json", "unsupported-keyword"])
def test_chat_with_a_bad_schema_says_why_in_a_sentence_and_runs_nothing(ctx, schema, words):
    with pytest.raises(gr.Error) as caught:
        ask(ChatHandlers(ctx), "Order a jacket", schema)
    assert words in caught.value.message and "Traceback" not in caught.value.message
    assert ctx.store.list_conversations() == []


def test_chat_with_a_schema_answers_in_json_that_follows_it(tmp_path):
    # The fake "knows" a JSON answer; the scaffold writes its fixed text, the fake only fills values.
    backend = FakeDiffusionBackend('{"size":"M","gift":false}', max_length=4096, name="fake-bd")
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    shown = final(ask(ChatHandlers(context), "Size M, no gift wrap", json.dumps(SMALL_SCHEMA)))
    reply = shown[OUT["chatbot"]][-1]["content"]
    assert "```json" in reply and '"size": "M"' in reply              # formatted: one key a line
    answer = json.loads(shown[OUT["trace"]].result.text.split("<eos>")[0])
    assert set(answer) == {"size", "gift"} and answer["size"] in ("S", "M", "L") and isinstance(answer["gift"], bool)
    assert "follows the JSON schema" in shown[OUT["status"]]
    assert "dp-pre" in shown[OUT["panel"]] and "pre-filled by the schema" in shown[OUT["panel"]]
    assert any(f.prefilled for f in shown[OUT["trace"]].frames)
    stored = context.store.get_conversation(shown[OUT["conversation_id"]])
    assert stored["turns"][-1]["generation"].frames[-1].prefilled                    # kept for replays
    sessions = SessionsHandlers(context)                          # opened again from the Sessions tab
    _, turns, conversation, _ = sessions.open(str(shown[OUT["conversation_id"]]))
    panel = sessions.show_turn(conversation, turns.value)[2]
    assert panel.count("dp-cell dp-pre") == shown[OUT["panel"]].count("dp-cell dp-pre") > 0
    context.close()


# -- Agent --------------------------------------------------------------------------------------
def test_the_agents_scaffolded_mode_sets_scaffold_on_the_runs_config(tmp_path):
    task = make_task("office_sum", "heldout", 7)
    backend = world_format(FakeDiffusionBackend(oracle_target([task]), max_length=8192, name="fake-bd"))
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    agent = AgentHandlers(context, updates_per_second=1e9)
    agent.tasks[task["id"]] = task
    settings = {**SETTINGS, "gen_length": 256, "block_size": 32, "steps": 32}
    for scaffold in (False, True):
        updates = list(agent.run(task["id"], "", "fake-bd", 8, settings={**settings, "scaffold": scaffold}))
        assert "Success" in updates[-1][3]
        conversation = context.store.list_conversations(kind="agent")[0]["id"]
        turns = context.store.get_conversation(conversation)["turns"]
        generated = [t for t in turns if t["generation"] is not None]
        assert all(t["config"].scaffold is scaffold for t in generated)
        prefilled = [p for t in generated for f in t["generation"].frames for p in f.prefilled]
        assert bool(prefilled) is scaffold                       # the scaffold wrote the calls' fixed text
        panels = [u[0] for u in updates if isinstance(u[0], str)]
        assert any("dp-pre" in p for p in panels) is scaffold
    context.close()


# -- Compare ------------------------------------------------------------------------------------
def test_a_scaffolded_race_prefills_both_sides_and_the_ar_baseline_jumps_forward(tmp_path):
    # model-free backends with seeded random logits: every value the scaffold leaves open is chance
    backends = {"random-bd": RandomLogits("diffusion"), "random-ar": RandomLogits("autoregressive")}
    context = fake_context(tmp_path, backends=backends)
    settings = {**SETTINGS, "gen_length": 64, "block_size": 16, "steps": 16}
    for scaffold in (False, True):
        updates = list(CompareHandlers(context, updates_per_second=1e9).run(
            "Show me my cart.", "random-bd", "random-ar", settings={**settings, "scaffold": scaffold}))
        panel_a, panel_b = final(updates)[:2]
        assert ("dp-pre" in panel_a, "dp-pre" in panel_b) == (scaffold, scaffold)
        conversation = context.store.list_conversations(kind="compare")[0]["id"]
        diffusion, baseline = [t["generation"] for t in context.store.get_conversation(conversation)["turns"][1:]]
        assert all(g.text.startswith("<tool_call>{\"name\":\"") for g in (diffusion, baseline)) is scaffold
        # AR: one forward per token, unless each known run of text is appended in one forward
        written = len(baseline.frames[-1].canvas)
        assert (baseline.stats.nfe < written) is scaffold, (baseline.stats.nfe, written)
        assert f"token {written}/64" in panel_b                  # the header counts tokens, not forwards
    context.close()
