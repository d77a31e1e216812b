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
    "#chat-pace-ms") sits closed inside it; its tab is the id's first word.

    Gradio mounts the children of an accordion only once it is open, and a moment after the click
    (about 40 ms on a quiet machine, far longer under load); an accordion's open state is also a
    prop that a late update of it can set back. A single look right after "Generation settings"
    was clicked once left "More settings" closed (CI, stop 53). So look again until the control
    shows, opening the disclosure whenever it is on the page and closed."""
    from playwright.sync_api import expect

    target = page.locator(control)
    tab = control.lstrip("#").split("-", 1)[0]
    toggle = more_settings_toggle(page, tab)
    for _ in range(100):
        if target.is_visible():
            return
        if toggle.is_visible() and not is_open(toggle):
            toggle.click()
        page.wait_for_timeout(100)
    expect(target).to_be_visible()


def more_settings_toggle(page, tab: str):
    """The button that opens and closes the tab's "More settings" disclosure."""
    return page.locator(f"#{tab}-more-settings > button.label-wrap")


def is_open(toggle) -> bool:
    """Whether a Gradio accordion's button shows it open (its class list holds "open")."""
    return "open" in (toggle.get_attribute("class") or "").split()


def open_tab(page, name: str) -> None:
    """Click the tab called `name`; on a phone the last tabs sit behind Gradio's "More tabs" menu."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() == 0 or not tab.first.is_visible():
        page.get_by_label("More tabs").click()
        tab = page.locator(".overflow-dropdown button", has_text=name)
    tab.first.click()
    page.wait_for_timeout(400)                   # the tab's components mount
