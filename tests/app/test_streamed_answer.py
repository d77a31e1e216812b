"""The answer streams into its bubble while the finish call that carries it is being written
(issue 46, point 4): what app/steps.py reads out of a call's text so far, and the in-flight bubble
ChatTurn shows for it."""

import pytest

from app.chat_turn import ChatTurn
from app.steps import answer_so_far, call_name_so_far, chat_messages
from engine.trace import GenerationConfig

FINISH_HEAD = '<tool_call>{"name":"finish","arguments":{"answer":"'


@pytest.mark.parametrize("text, want", [
    (FINISH_HEAD, None),                                              # begun, nothing decided yet
    (FINISH_HEAD + "Added 1 x P5K7", "Added 1 x P5K7"),
    (FINISH_HEAD + 'Added 1 x P5K7 in size L."}}</tool_call>', "Added 1 x P5K7 in size L."),
    (FINISH_HEAD + 'She said \\"yes', 'She said "yes'),
    (FINISH_HEAD + "line one\\nline two\\", "line one\nline two"),       # an escape cut at the end
    (FINISH_HEAD + "caf\\u00", "caf"),                                  # a \\u escape cut short
    ('<tool_call>{"name": "finish", "arguments": {"answer": "spaced', "spaced"),
    ('<tool_call>{"name":"search_products","arguments":{"query":"', None),
    ("Hello there", None),
])
def test_the_answer_of_a_finish_call_so_far(text, want):
    assert (answer_so_far(text) or None) == want


def test_a_calls_name_is_read_once_decided():
    assert call_name_so_far('<tool_call>{"name":"add_to_cart","argu') == "add_to_cart"
    assert call_name_so_far('<tool_call>{"name":"add_to') is None
    assert call_name_so_far('<tool_call>{"na') is None


class _View:
    def __init__(self, text):
        self.text = text

    def partial_text(self, _backend):
        return self.text


@pytest.mark.parametrize("text, shown", [
    (FINISH_HEAD + "Your cart holds <b>2</b> items", "Your cart holds &lt;b&gt;2&lt;/b&gt; items …"),
    ('<tool_call>{"name":"view_cart","arguments":{', "Tool call view_cart: being written…"),
    ('<tool_call>{"na', "Tool call: being written…"),
])
def test_the_bubble_in_flight_shows_the_answer_so_far_or_the_call_being_written(text, shown):
    turn = ChatTurn(None, GenerationConfig(gen_length=16, block_size=16, steps=4), "fake-bd", "hi", [],
                    {"role": "user", "content": "hi"})
    turn.pending, turn.view = True, _View(text)
    bubble = chat_messages(turn._in_flight())[0]
    assert shown in bubble["content"] or shown in bubble.get("metadata", {}).get("title", "")

