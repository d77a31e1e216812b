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


def test_an_html_page_answer_also_runs_in_the_sandboxed_preview_and_other_answers_hide_it(tmp_path):
    from app.chat import ChatHandlers
    from tests.app.test_app_handlers import OUT, named, settled
    from tests.e2e.app_fakes import fake_context
    from tests.fakes import FakeDiffusionBackend

    page = "<!DOCTYPE html><html><body><h1>Hi</h1><script>alert(1)</script></body></html>"
    backend = FakeDiffusionBackend(page, name="fake-bd", max_length=2048)
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    try:
        chat = ChatHandlers(context, updates_per_second=1e9)
        settings = named((128, 32, 32, "threshold", 0.9, 0.0, 0))
        final = settled(list(chat.submit("a page please", [], None, None, None, "fake-bd", "", False,
                                         settings=settings)))[-1]
        preview = final[OUT["preview"]]
        assert preview.visible and 'sandbox=""' in preview.value and "<iframe" in preview.value
        assert "```html" in final[OUT["chatbot"]][-1]["content"]          # and its code, highlighted
        backend.target = "Just words."
        again = settled(list(chat.submit("and now words", final[OUT["history"]], final[OUT["conversation_id"]],
                                         final[OUT["world"]], final[OUT["tree"]], "fake-bd", "", False,
                                         settings=settings)))[-1]
        assert not again[OUT["preview"]].visible
        # the page's exchange answered again in words, then browsed back: its page comes back too
        words = settled(list(chat.regenerate(final[OUT["history"]], final[OUT["conversation_id"]],
                                             final[OUT["world"]], final[OUT["tree"]], "fake-bd", "", False,
                                             settings=settings)))[-1]
        assert not words[OUT["preview"]].visible
        back = chat.show_version("0:-1", words[OUT["tree"]])
        assert back[-1].visible and 'sandbox=""' in back[-1].value
    finally:
        context.close()
