"""Tools that come and go, in both WebMCP modes: a tool a page adds or withdraws after its load (a
toolchange with no call in between) is seen by the next read, and a call to a tool the next page
registers late, right after a tool that navigates there, lands on that page (never a race).

The race (found on a third-party catalogue page): `open_product` goes to a product page, which
registers `get_specifications` a moment after it loads; a scripted model calls it at once. The
tool navigates in three ways (and answers, answers first and then navigates, or never answers),
and the product page waits 0 to 150 ms before it registers; 50 runs per mode, every one must give
the specifications. The first call is a navigation whenever the page began to leave during it
(whether its answer or the navigation got back first was itself a race, one that differed by mode).

Needs /usr/bin/chromium; skipped with that reason when it is absent.
"""

from __future__ import annotations

import pytest

from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.static_site import static_site
from world.webmcp.driver import WebMCPDriver

pytestmark = BROWSER_MARKS
RUNS = 50
HOW = ("answers", "answers-then-goes", "never-answers")

CATALOGUE_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Catalogue</title></head><body><script>
const go = () => { location.href = "/product" + location.search; };
document.modelContext.registerTool({name: "open_product", description: "Open a product's page.",
  inputSchema: {type: "object", properties: {how: {type: "string"}}, required: ["how"]},
  execute: async ({how}) => {
    if (how === "answers") { go(); return {opening: true}; }
    if (how === "answers-then-goes") { setTimeout(go, 0); return {opening: true}; }
    go(); await new Promise(() => {});
  }});
const later = new AbortController();
setTimeout(() => document.modelContext.registerTool({name: "later", description: "Added after the load.",
  inputSchema: {type: "object", properties: {}}, execute: async () => ({late: true})}, {signal: later.signal})
  .then(() => { window.laterIn = true; }), 50);
document.modelContext.registerTool({name: "withdraw_later", description: "Withdraws the tool 'later'.",
  inputSchema: {type: "object", properties: {}},
  execute: async () => {
    setTimeout(() => { later.abort(); window.laterOut = true; }, 20);
    return {withdrawing: true};
  }});
document.body.dataset.ready = "true";
</script></body></html>"""

PRODUCT_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Product</title></head><body><script>
const wait = Number(new URLSearchParams(location.search).get("wait") || 0);
setTimeout(() => document.modelContext.registerTool({name: "get_specifications",
  description: "The product's specifications.", inputSchema: {type: "object", properties: {}},
  execute: async () => ({watts: 1450, waited: wait})}), wait);
</script></body></html>"""


@pytest.fixture(scope="module")
def browser(webmcp_browser):
    return webmcp_browser


@pytest.fixture(scope="module")
def shop_url():
    with static_site({"/": CATALOGUE_PAGE, "/product": PRODUCT_PAGE}) as url:
        yield url


def test_a_tool_added_or_withdrawn_without_a_call_is_seen(browser, webmcp, shop_url):
    with WebMCPDriver(shop_url, browser=browser, webmcp=webmcp) as driver:
        tab = driver.open(shop_url + "/")
        driver.pages[tab].wait_for_function("() => window.laterIn === true")               # registered, no call since
        assert "later" in [t.name for t in driver.tools()]
        assert driver.call("later", {}) == {"late": True}
        assert driver.call("withdraw_later", {}) == {"withdrawing": True}
        driver.pages[tab].wait_for_function("() => window.laterOut === true")              # withdrawn after the call
        assert "later" not in [t.name for t in driver.tools()]
        assert driver.call("later", {}) == {"error": "unknown_tool", "name": "later"}


def test_the_next_pages_late_tool_is_called_there_every_time(browser, webmcp, shop_url):
    answers = []
    with WebMCPDriver(shop_url, browser=browser, webmcp=webmcp, timeout_s=5.0) as driver:
        for run in range(RUNS):
            how, wait = HOW[run % len(HOW)], (run * 37) % 151
            driver.open(f"{shop_url}/?wait={wait}", tab=0)
            opened = driver.call("open_product", {"how": how})
            # a call during which the page began to leave is a navigation, answer or none
            assert opened == ({"opening": True} if how == "answers-then-goes"
                              else {"error": "navigation", "url": f"{shop_url}/product?wait={wait}"}), (run, how)
            answers.append(driver.call("get_specifications", {}))
        assert driver.page_errors == []
    races = [(run, answer) for run, answer in enumerate(answers)
             if answer != {"watts": 1450, "waited": (run * 37) % 151}]
    assert races == []
