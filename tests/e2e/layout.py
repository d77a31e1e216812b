"""Reading where an element stands once the page's layout has settled. Gradio mounts a column's
pieces one after another, so a position read right after the page opens can be a layout still
being built (a box under the live panel stood 420 px higher before the panel was there)."""

from __future__ import annotations

TOP_JS = "e => e.getBoundingClientRect().top + window.scrollY"      # on the page, whatever the scroll


def settled_top(page, locator, tries: int = 50) -> float:
    """The element's top in the page once two readings 100 ms apart agree."""
    top = None
    for _ in range(tries):
        now = locator.evaluate(TOP_JS)
        if now == top:
            return now
        top = now
        page.wait_for_timeout(100)
    raise AssertionError(f"the layout kept moving: last top {top}")
