"""Setting the playground's controls from a browser test."""

from __future__ import annotations


def set_number(page, control: str, value: str) -> None:
    """Type `value` into the number box of the control `control` (a CSS selector) and submit it.
    A control inside an accordion that has just opened is still mounting, and mounting writes
    its initial value over a fill made too early: fill again until the value holds."""
    from playwright.sync_api import expect

    box = page.locator(f"{control} input[type=number]")
    show_setting(page, control)
    for _ in range(10):
        box.fill(value)
        box.press("Enter")
        page.wait_for_timeout(200)
        if box.input_value() == value:
            break
    expect(box).to_have_value(value)


def show_setting(page, control: str) -> None:
    """Open the tab's "More settings" disclosure when `control` (a CSS id selector such as
    "#chat-pace-ms") sits closed inside it; its tab is the id's first word."""
    from playwright.sync_api import expect

    target = page.locator(control)
    if target.is_visible():
        return
    tab = control.lstrip("#").split("-", 1)[0]
    more = page.locator(f"#{tab}-more-settings")
    if more.count() and not target.is_visible():
        more.get_by_text("More settings").first.click()
    expect(target).to_be_visible()
