"""Setting the playground's controls from a browser test."""

from __future__ import annotations


def set_number(page, control: str, value: str) -> None:
    """Type `value` into the number box of the control `control` (a CSS selector) and submit it.
    A control inside an accordion that has just opened is still mounting, and mounting writes
    its initial value over a fill made too early: fill again until the value holds."""
    from playwright.sync_api import expect

    box = page.locator(f"{control} input[type=number]")
    for _ in range(10):
        box.fill(value)
        box.press("Enter")
        page.wait_for_timeout(200)
        if box.input_value() == value:
            break
    expect(box).to_have_value(value)
