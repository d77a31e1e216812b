"""world/format.py: the chat template, canonical calls, and a parser that never raises."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from world.format import (
    COMPACT_SYSTEM,
    EOS,
    PARSE_ERRORS,
    SPECIAL_TOKENS,
    ParsedCall,
    ParseError,
    assistant_spans,
    parse_call,
    render_call,
    render_chat,
    system_prompt,
)
from world.tools import TOOLS, TOOLS_BY_NAME

CHAT = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "Find a red cap in size M."},
    {"role": "assistant", "content": '<tool_call>{"name":"view_cart","arguments":{}}</tool_call>'},
    {"role": "tool", "content": '{"items":[],"total":0}'},
    {"role": "assistant", "content": '<tool_call>{"name":"finish","arguments":{"answer":"ok"}}</tool_call>'},
]


def test_render_chat_exact_text():
    assert render_chat(CHAT, add_generation_prompt=False) == (
        "<|system|>S\n<|user|>Find a red cap in size M.\n"
        '<|assistant|><tool_call>{"name":"view_cart","arguments":{}}</tool_call><|eos|>\n'
        '<|tool|><tool_response>{"items":[],"total":0}</tool_response>\n'
        '<|assistant|><tool_call>{"name":"finish","arguments":{"answer":"ok"}}</tool_call><|eos|>\n')
    assert render_chat(CHAT[:2], add_generation_prompt=True).endswith("M.\n<|assistant|>")


def test_assistant_spans_cover_each_turn_and_its_eos():
    text = render_chat(CHAT, add_generation_prompt=False)
    spans = assistant_spans(text)
    assert [text[a:b] for a, b in spans] == [CHAT[2]["content"] + EOS, CHAT[4]["content"] + EOS]
    open_turn = render_chat(CHAT[:2], True) + "<tool_call>{"
    assert [open_turn[a:b] for a, b in assistant_spans(open_turn)] == ["<tool_call>{"]


def test_special_tokens_and_system_prompts():
    assert SPECIAL_TOKENS[:3] == ["<|mask|>", "<|eos|>", "<|pad|>"] and len(SPECIAL_TOKENS) == 11
    assert system_prompt("compact") == COMPACT_SYSTEM and "\n" not in COMPACT_SYSTEM
    assert system_prompt(None) is None and "<tools>" in system_prompt("full")
    with pytest.raises(ValueError):
        system_prompt("long")


def test_render_call_uses_schema_order_and_compact_json():
    text = render_call("add_to_cart", {"quantity": 2, "size": "L", "product_id": "P3K7"})
    assert text == ('<tool_call>{"name":"add_to_cart",'
                    '"arguments":{"product_id":"P3K7","size":"L","quantity":2}}</tool_call>')


def test_parse_round_trip_and_tolerance():
    text = render_call("search_products", {"size": "M", "query": "cap", "color": "red"})
    for variant in (text, text + EOS + "junk", text.replace("</tool_call>", "") + EOS,
                    '  <tool_call> {"name": "search_products", '
                    '"arguments": {"size": "M", "color": "red", "query": "cap"}}'
                    "</tool_call>", '{"name":"search_products","arguments":{"query":"cap","color":"red","size":"M"}}'):
        parsed = parse_call(variant)
        assert isinstance(parsed, ParsedCall), variant
        assert parsed.render() == text and list(parsed.arguments) == ["query", "color", "size"]
    assert parse_call(render_call("add_to_cart", {"product_id": "P1", "size": "S", "quantity": 2.0})).arguments[
        "quantity"] == 2


@pytest.mark.parametrize("text,kind,detail", [
    ("Sure, I will look.", "no_call", []),
    ('<tool_call>{"name": "finish", "arguments": {"answer": </tool_call>', "malformed_json", []),
    ("<tool_call>[1, 2]</tool_call>", "malformed_json", []),
    ('<tool_call>{"name": "finish", "arguments": [1]}</tool_call>', "malformed_json", []),
    ('<tool_call>{"name": "fly_to_moon", "arguments": {}}</tool_call>', "unknown_tool", []),
    ('<tool_call>{"name": "add_to_cart", "arguments": {"product_id": "P1", "size": "S"}}</tool_call>',
     "missing_arg", ["quantity"]),
    ('<tool_call>{"name": "add_to_cart", "arguments": {"product_id": "P1", "size": "S", "quantity": "2"}}'
     "</tool_call>", "bad_arg_type", ["quantity"]),
    ('<tool_call>{"name": "search_products", "arguments": {"query": "cap", "colour": "red"}}</tool_call>',
     "extra_arg", ["colour"]),
    ('<tool_call>{"name": "search_products", "arguments": {"query": "cap", "size": "XXL"}}</tool_call>',
     "bad_arg_type", ["size"]),
    ('<tool_call>{"name": "sum_amounts", "arguments": {"amounts": [1, NaN]}}</tool_call>', "malformed_json", []),
    ('<tool_call>{"name": "sum_amounts", "arguments": {"amounts": [1e999]}}</tool_call>', "malformed_json", []),
    ("<tool_call>" + "[" * 100000 + "</tool_call>", "malformed_json", []),
])
def test_typed_parse_errors(text, kind, detail):
    error = parse_call(text)
    assert isinstance(error, ParseError) and error.kind == kind
    if detail:
        assert error.detail == detail and error.observation() == {"error": kind, "args": detail}
    assert error.message.endswith(".")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)
names = st.sampled_from([t["name"] for t in TOOLS] + ["nope", ""])


@st.composite
def call_texts(draw):
    name = draw(names)
    keys = list(TOOLS_BY_NAME.get(name, {"inputSchema": {"properties": {}}})["inputSchema"]["properties"])
    args = draw(st.dictionaries(st.sampled_from(keys + ["extra"]), json_values, max_size=4))
    body = json.dumps({"name": name, "arguments": args})
    cut = draw(st.integers(0, len(body)))
    body = draw(st.sampled_from([body, body[:cut], body[:cut] + body[cut + 1:]]))
    return draw(st.sampled_from(["<tool_call>", "", "x<tool_call> "])) + body + draw(
        st.sampled_from(["</tool_call>", "", "</tool_call><|eos|>", "<|eos|>}}", "</tool_call><tool_call>{"]))


def _check(result):
    assert isinstance(result, ParsedCall | ParseError)
    if isinstance(result, ParseError):
        assert result.kind in PARSE_ERRORS
    else:
        assert result.name in TOOLS_BY_NAME
        assert isinstance(parse_call(result.render()), ParsedCall)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_parser_never_raises_on_any_text(text):
    _check(parse_call(text))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call_texts())
def test_parser_never_raises_on_near_calls(text):
    _check(parse_call(text))


def test_parser_survives_non_text():
    assert parse_call(None).kind == "no_call" and parse_call(b"\xff").kind == "no_call"
