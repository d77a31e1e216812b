"""At 390x844 in headless Chromium (issue 46, point 3): nothing scrolls sideways, in any tab of the
app or on the shop and office pages, and a table narrower than its content scrolls inside its card
instead of cutting ids, headings and buttons into letters. Set DP_SHOTS=<folder> to keep a
screenshot of each page."""

from __future__ import annotations

from tests.e2e.app_fakes import fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.test_accessibility import TABS, open_tab, world_page_urls
from tests.e2e.test_first_contact import shot

pytestmark = BROWSER_MARKS
PHONE = {"width": 390, "height": 844}
SIDEWAYS = "() => document.scrollingElement.scrollWidth - innerWidth"
# table cells, headings and buttons drawn on more than one line although they hold one short word
CUT_WORDS = """() => [...document.querySelectorAll('td, th, button')].filter(e => {
  const text = e.innerText.trim();
  if (!text || /\\s/.test(text) || text.length > 12 || e.offsetParent === null) return false;
  const line = parseFloat(getComputedStyle(e).lineHeight) || 20;
  const range = document.createRange(); range.selectNodeContents(e);
  return range.getBoundingClientRect().height > 1.5 * line;
}).map(e => e.innerText.trim())"""


def test_nothing_scrolls_sideways_and_no_word_is_cut_on_a_phone(browser, tmp_path):
    ctx = fake_context(tmp_path)
    sideways, cut = {}, {}
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport=PHONE)
        page.goto(url)
        page.locator("#chat-world-page iframe").wait_for(timeout=30_000)
        for name in TABS:
            open_tab(page, name)
            sideways[name] = page.evaluate(SIDEWAYS)
        open_tab(page, "Chat")
        for app, address in world_page_urls(page, url).items():
            page.goto(address)
            page.locator("body[data-ready]").wait_for(state="attached", timeout=30_000)
            page.wait_for_timeout(300)                 # the tables are drawn after the tools load
            sideways[app], cut[app] = page.evaluate(SIDEWAYS), page.evaluate(CUT_WORDS)
            shot(page, f"phone-{app}")
        rows = page.locator("td").count()
        page.close()
    ctx.close()
    assert rows > 5                                    # the office page drew its tables
    assert {where: px for where, px in sideways.items() if px > 0} == {}
    assert cut == {"shop": [], "office": []}
