"""The browser tests' own helper for reaching a setting (`tests/e2e/controls.py`): it must show a
control under "More settings" however early it is asked, and never close a disclosure that is open.
"""

from __future__ import annotations

from tests.e2e.app_fakes import fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import is_open, more_settings_toggle, set_number, show_setting

pytestmark = BROWSER_MARKS

VIEWPORT = {"width": 1440, "height": 960}


def test_a_setting_under_more_settings_shows_when_asked_before_its_accordion_has_mounted(browser, tmp_path):
    with running_app(fake_context(tmp_path)) as (_demo, url):
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        page.locator("#prompt textarea").wait_for(timeout=30_000)
        page.get_by_role("tab", name="Compare").click()
        page.locator("#compare-settings > button.label-wrap").wait_for()
        # a click that returns at once, as on a loaded machine: nothing inside has mounted yet
        page.evaluate("() => document.querySelector('#compare-settings > button.label-wrap').click()")
        show_setting(page, "#compare-pace-ms")
        assert page.locator("#compare-pace-ms").is_visible()
        assert is_open(more_settings_toggle(page, "compare"))
        # asked again with the disclosure open, it leaves it open
        show_setting(page, "#compare-seed")
        show_setting(page, "#compare-pace-ms")
        assert is_open(more_settings_toggle(page, "compare"))
        set_number(page, "#compare-pace-ms", "40")
        # closed again (as a late update of the accordion would), it opens it again
        more_settings_toggle(page, "compare").click()
        page.locator("#compare-pace-ms").wait_for(state="hidden")
        show_setting(page, "#compare-pace-ms")
        assert page.locator("#compare-pace-ms input[type=number]").input_value() == "40"
        page.close()
