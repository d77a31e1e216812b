"""The mark on a value or a step that needs a second look (a tool error, a value the model read
nowhere): a warning sign and words, never colour alone, with the full sentence as its title so
a pointer or a screen reader gets the reason. Shared by the app's tables and the HTML replay."""

from __future__ import annotations

from markupsafe import Markup

WARNING = "⚠️"
MARK_CSS = """
.dp-flag { display: block; margin-top: .2rem; padding: .1rem .4rem; border-left: 4px solid #b45309;
  background: rgba(217,119,6,.12); font-size: 12px; font-weight: 600; }
"""


def flag_html(words: str, explanation: str) -> Markup:
    """`⚠️ words`, with `explanation` as its title and accessible description (both escaped)."""
    return Markup('<span class="dp-flag" role="note" title="{}" aria-label="{}">{} {}</span>').format(
        explanation, f"Warning: {explanation}", WARNING, words)
