"""Conversations through the shop's and the office's pages (run_conversation(..., pages=venue)):
the oracle and a model that gets every value wrong give the same verdicts and the same transcripts
as in the built-in world, one visit per conversation (the cart a request filled is the next
one's); the conversation benchmark through the pages says `via` webmcp and times every call.

Needs /usr/bin/chromium; skipped with that reason when it is absent.
"""

from __future__ import annotations

import pytest

from bench.conversations import run_conversation_benchmark
from engine.trace import GenerationConfig
from tests.e2e.chromium import BROWSER_MARKS
from tests.world.scripted import oracle_office_six, wrong_value
from world import conversation_sets
from world.agent import run_conversation
from world.format import full_system_prompt
from world.office_six import load_office_six
from world.oracle import OracleModel
from world.webmcp.driver import PageToolsOf
from world.webmcp.venue import PageVenue

pytestmark = BROWSER_MARKS
CART_CALLS = {"add_to_cart", "checkout_guest", "view_cart"}


@pytest.fixture(scope="module")
def browser(webmcp_browser):
    """On the browser's own WebMCP and on the polyfill (conftest's `webmcp`)."""
    return webmcp_browser


def _conversations() -> list[dict]:
    """The first office-six chain, and conversations of the benchmark where a request fills the cart
    and a later one checks out or reads it (state the pages must carry from request to request)."""
    def shop_chain(c: dict) -> bool:
        names = [[a["name"] for a in t["gold_actions"]] for t in c["turns"]]
        first = next((k for k, n in enumerate(names) if "add_to_cart" in n), None)
        return first is not None and any(CART_CALLS & set(n) for n in names[first + 1:])
    return [load_office_six()[0]] + [c for c in conversation_sets.load_conversations() if shop_chain(c)][:2]


def _comparable(ran) -> dict:
    out = ran.to_dict()
    out["seconds"] = 0.0
    for request in out["requests"]:
        request["seconds"] = 0.0
        # the system prompt lists the tools as the pages registered them: the checkout form's schema
        # as the browser reads it from its fields (checked below); the rest is the conversation
        request["messages"] = [m for m in request["messages"] if m["role"] != "system"]
        for step in request["steps"]:
            step["seconds"] = 0.0
    return out


def test_a_conversation_through_the_pages_is_the_one_in_the_world(browser, webmcp):
    conversations = _conversations()
    assert len(conversations) == 3, "the benchmark holds conversations that carry a cart from request to request"
    config = GenerationConfig()
    with PageVenue(browser=browser, webmcp=webmcp) as venue:
        for conversation in conversations:
            for model in (OracleModel, wrong_value):
                built_in = run_conversation(None, conversation, config, system="full", generate_for=model)
                timed = len(venue.driver.call_ms)
                paged = run_conversation(None, conversation, config, system="full", generate_for=model, pages=venue)
                ran_in_page = [s for t in paged.requests for s in t.steps if s.call and s.error is None
                               and s.call["name"] != "finish"]
                assert ran_in_page and len(venue.driver.call_ms) - timed == len(ran_in_page)   # each call in a page
                assert _comparable(paged) == _comparable(built_in), (conversation["id"], model.__name__)
                listed = PageToolsOf(venue.driver).tools.tools
                assert paged.requests[0].messages[0] == {"role": "system", "content": full_system_prompt(listed)}
                assert paged.success == (model is OracleModel)
                assert [t.success for t in paged.requests] == [model is OracleModel] * len(conversation["turns"])
        assert venue.driver.page_errors == [] and venue.driver.refused == []


def test_the_benchmark_through_the_pages_times_every_tool_call(browser, webmcp):
    chains = load_office_six()[:2]
    ran: list = []
    with PageVenue(browser=browser, webmcp=webmcp) as venue:
        report = run_conversation_benchmark(
            {"oracle": oracle_office_six()}, chains, attempts=1, system=None, warmup=False, pages=venue,
            config=GenerationConfig(gen_length=256, block_size=32, steps=32, sampler="threshold", threshold=0.9),
            on_conversation=lambda name, attempt, conversation: ran.append(conversation))
    calls = sum(1 for c in ran for t in c.requests for s in t.steps if s.call and s.call["name"] != "finish")
    browser_ms = report["browser_ms_per_call"]
    assert report["via"] == "webmcp" and report["webmcp"] == webmcp and calls > 0 and browser_ms["calls"] == calls
    assert 0 < browser_ms["median"] <= browser_ms["p95"]
    assert report["models"]["oracle"]["conversation_success_rate"] == 1.0
