"""An answer that is code is drawn as a fenced, highlighted block in the Chat (issue 46, point 4),
while Copy answer gives the code as written; plain answers and tool cards are left as they are."""

import pytest

from app.steps import chat_messages


@pytest.mark.parametrize("answer, lang", [
    ("def reverse(text):\n    return text[::-1]", "python"),
    ("Here it is:\n<!DOCTYPE html><html><body><h1>Hi <b>there</b></h1></body></html>", "html"),
    ("\\documentclass{article}\n\\begin{document}Hi\\end{document}", "latex"),
])
def test_a_code_answer_is_drawn_as_a_fenced_block_and_copied_without_the_fence(answer, lang):
    from app.chat_tab import answer_text

    history = [{"role": "user", "content": "code please"}, {"role": "assistant", "content": answer, "shown": answer}]
    shown = chat_messages(history)[1]["content"]
    assert shown.count("```") == 2 and f"```{lang}" in shown
    assert "<b>" not in shown.split("```")[0]                 # prose around the block stays escaped
    assert answer_text(history) == answer                    # Copy answer gives the code as written


def test_plain_answers_and_tool_cards_are_not_fenced():
    history = [{"role": "assistant", "content": "x", "shown": "Added 1 x P5K7 in size L."},
               {"role": "assistant", "content": "x", "title": "Tool call: f()", "shown": "def f():\n    pass"}]
    contents = [m["content"] for m in chat_messages(history)]
    assert "```python" not in contents[0] and contents[1].count("```python") == 0
