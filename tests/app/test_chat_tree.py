"""The chat as a tree of exchanges (app/chat_tree.py): versions of any exchange, branches that
keep what followed them, the Chatbot's messages with each exchange's arrows, and an edit of an
earlier message run through the Chat handlers."""

from __future__ import annotations

import gradio as gr
import pytest

from app.chat import ChatHandlers
from app.chat_tree import ChatTree, Version, parse_pick
from tests.app.test_app_handlers import OUT, SETTINGS, ask, named, settled
from tests.e2e.app_fakes import fake_context
from world.state import World


@pytest.fixture
def ctx(tmp_path):
    context = fake_context(tmp_path)
    yield context
    context.close()


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def answer(text: str) -> dict:
    return {"role": "assistant", "content": text, "shown": text}


def version(message: str, reply: str, seed: int | None = None) -> Version:
    return Version(user(message), (answer(reply),), None, None, seed)


def two_exchanges() -> ChatTree:
    return ChatTree().answered(0, version("a", "A")).answered(1, version("b", "B"))


def said(tree: ChatTree) -> list[str]:
    return [m["content"] for m in tree.history()]


def test_a_new_version_of_an_earlier_exchange_starts_a_branch_and_the_old_one_keeps_what_followed():
    tree = two_exchanges()
    assert said(tree) == ["a", "A", "b", "B"]
    edited = tree.answered(0, version("a2", "A2"))
    assert said(edited) == ["a2", "A2"]                   # the branch: nothing followed it yet
    assert len(edited.root.items) == 2 and edited.root.at == 1
    back = edited.moved(0, -1)
    assert said(back) == ["a", "A", "b", "B"]             # the old version, and what followed it
    assert said(back.moved(0, 5)) == ["a2", "A2"]         # moves stay within the versions there are
    assert said(tree) == ["a", "A", "b", "B"]             # frozen: the old tree is unchanged
    grown = edited.answered(1, version("c", "C"))         # the branch goes on by itself
    assert said(grown) == ["a2", "A2", "c", "C"] and said(grown.moved(0, -1)) == ["a", "A", "b", "B"]
    assert said(grown.moved(0, -1).moved(0, 1)) == ["a2", "A2", "c", "C"]


def test_a_regenerated_exchange_deep_in_the_chat_keeps_the_exchanges_before_it():
    tree = two_exchanges().answered(1, version("b", "B2", seed=7))
    assert said(tree) == ["a", "A", "b", "B2"] and said(tree.moved(1, -1)) == ["a", "A", "b", "B"]
    assert tree.history(1) == [user("a"), answer("A")]
    with pytest.raises(IndexError):
        tree.answered(3, version("x", "X"))
    assert tree.moved(9, -1) is tree                      # a pick of an exchange that is gone changes nothing


def test_the_messages_carry_each_exchange_s_arrows_and_which_version_is_shown():
    tree = two_exchanges().answered(1, version("b", "B2", seed=7))
    messages = tree.messages()
    assert [m["content"].split("\n\n")[0] for m in messages] == ["a", "A", "b", "B2"]
    assert "version" not in messages[1]["content"]        # one version: no arrows
    line = messages[3]["content"]
    assert "version 2/2 · seed 7" in line
    assert "(<#dp-version:1:-1>" in line and "(<#dp-version:1:1>" in line
    assert tree.messages(1) == messages[:2]


def test_a_message_index_names_its_exchange_tool_steps_included():
    step = {"role": "assistant", "content": "<tool_call>", "title": "Tool call search", "shown": "{}"}
    tool = {"role": "tool", "content": "[]"}                  # read by the model, never shown
    tree = ChatTree().answered(0, Version(user("a"), (step, tool, answer("A")), None, None)).answered(
        1, version("b", "B"))
    assert [tree.exchange_of(i) for i in range(5)] == [0, 0, 0, 1, 1]
    with pytest.raises(IndexError):
        tree.exchange_of(5)


def test_a_history_alone_becomes_one_version_per_exchange():
    world = World(0, "heldout")
    history = [user("a"), answer("A"), user("b"), answer("B")]
    tree = ChatTree.linear(history, world)
    assert tree.history() == history and len(tree.path()) == 2 and tree.world() is world
    assert ChatTree.linear([], None).root is None and ChatTree().messages() == []


def test_picks_from_the_page_are_read_or_refused():
    assert parse_pick("2:-1") == (2, -1) and parse_pick("0:1") == (0, 1) and parse_pick("1:9") == (1, 1)
    assert parse_pick("") is None and parse_pick("x:1") is None and parse_pick("-1:1") is None
    assert parse_pick(None) is None


def test_editing_an_earlier_message_answers_from_the_world_before_it_and_forgets_what_followed(ctx):
    chat = ChatHandlers(ctx)
    first = ask(chat, "first question")[-1]
    first[OUT["world"]].cart.append(["P1A2", 1])          # the world changed after the first answer
    second = ask(chat, "second question", first[OUT["history"]], first[OUT["conversation_id"]],
                 world=first[OUT["world"]], tree=first[OUT["tree"]])[-1]
    backend = ctx.registry.get("fake-bd")
    edited = settled(list(chat.edit((0, "first, edited"), second[OUT["history"]], second[OUT["conversation_id"]],
                                    second[OUT["world"]], second[OUT["tree"]], "fake-bd", "", False,
                                    settings=named(SETTINGS))))[-1]
    prompt = backend.tokenizer.decode(backend.prompts[-1])
    assert "first, edited" in prompt and "second question" not in prompt and "first question" not in prompt
    assert [m["content"] for m in edited[OUT["history"]] if m["role"] == "user"] == ["first, edited"]
    assert edited[OUT["world"]].cart == []                  # the world as it was before the first message
    back = chat.show_version("0:-1", edited[OUT["tree"]])
    assert [m["content"] for m in back[1] if m["role"] == "user"] == ["first question", "second question"]
    assert back[2].cart == [["P1A2", 1]]    # that branch's world, as it left it
    shown = []
    with pytest.raises(gr.Error, match="prompt is empty") as refused:    # refused: the chat as it was shown again,
        for update in chat.edit((0, "  "), edited[OUT["history"]], None, edited[OUT["world"]], edited[OUT["tree"]],
                                "fake-bd", "", False, settings=named(SETTINGS)):
            shown.append(update)
    assert refused.value.shows["chatbot"] == edited[OUT["chatbot"]] and not shown     # in the refusal's own update
    with pytest.raises(gr.Error, match="no longer in the chat"):
        list(chat.edit((40, "x"), edited[OUT["history"]], None, None, edited[OUT["tree"]], "fake-bd", "", False,
                       settings=named(SETTINGS)))
