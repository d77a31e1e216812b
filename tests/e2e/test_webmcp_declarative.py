"""A page whose tools are only declarative forms (<form toolname tooldescription>, no script
registers anything), driven in both WebMCP modes: the browser's own and the polyfill list the same
schemas (toolparamdescription included) and give the same answers and errors: a form answered
through respondWith, one that waits for the person (and is cancelled when the driver gives up), one
whose page prevents the submit without answering, an unknown parameter, and one that submits to the
next page (a navigation), whose own form is then called.

Needs /usr/bin/chromium; skipped with that reason when it is absent.
"""

from __future__ import annotations

import pytest

from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.static_site import static_site
from world.webmcp.driver import WebMCPDriver

pytestmark = BROWSER_MARKS

FORMS_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Bistro</title></head><body>
<form id="book" toolname="book_table" tooldescription="Book a table." toolautosubmit>
  <select name="party" required><option value="">how many</option><option value="2">two</option>
    <option value="4">four</option></select>
  <input name="day" required toolparamdescription="The day, as the guest says it.">
  <input type="number" name="hour" min="12" max="22" required>
  <input type="checkbox" name="outside">
  <button type="submit">Book</button></form>
<form id="ask" toolname="ask_the_chef" tooldescription="Ask the chef; the guest sends it.">
  <input name="question" required><button type="submit">Send</button></form>
<form id="quiet" toolname="broken_form" tooldescription="Prevents its submit and answers nothing." toolautosubmit>
  <input name="anything"><button type="submit">Go</button></form>
<form toolname="find_dish" tooldescription="Find a dish on the menu page." toolautosubmit action="/menu" method="get">
  <input name="dish" required><button type="submit">Find</button></form>
<p id="said"></p>
<script>
window.events = [];
for (const kind of ["toolactivated", "toolcancel"])
  document.modelContext.addEventListener(kind, event => window.events.push(`${kind}:${event.toolName}`));
document.getElementById("book").addEventListener("submit", event => {
  event.preventDefault();
  const data = new FormData(event.target);
  const booking = {party: Number(data.get("party")), day: data.get("day"), hour: Number(data.get("hour")),
                   outside: data.get("outside") === "on"};
  document.getElementById("said").textContent = `Booked for ${booking.party} on ${booking.day}.`;
  if (event.agentInvoked) event.respondWith(Promise.resolve({booked: booking}));
});
document.getElementById("quiet").addEventListener("submit", event => event.preventDefault());
document.body.dataset.ready = "true";
</script></body></html>"""

MENU_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Menu</title></head><body>
<form id="order" toolname="order_dish" tooldescription="Order the dish found." toolautosubmit>
  <input name="dish" required><button type="submit">Order</button></form>
<script>
document.getElementById("order").addEventListener("submit", event => {
  event.preventDefault();
  event.respondWith(Promise.resolve({ordered: new FormData(event.target).get("dish"), from: location.search}));
});
document.body.dataset.ready = "true";
</script></body></html>"""

EXPECTED_SCHEMAS = {   # as Chromium 156 synthesizes them from the forms' controls, and the polyfill the same
    "book_table": {"type": "object", "required": ["party", "day", "hour"], "properties": {
        "party": {"type": "string", "enum": ["", "2", "4"], "anyOf": [
            {"type": "string", "const": "", "title": "how many"}, {"type": "string", "const": "2", "title": "two"},
            {"type": "string", "const": "4", "title": "four"}]},
        "day": {"type": "string", "description": "The day, as the guest says it."},
        "hour": {"type": "number", "minimum": 12, "maximum": 22, "multipleOf": 1},
        "outside": {"type": "boolean"}}},
    "ask_the_chef": {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}},
    "broken_form": {"type": "object", "required": [], "properties": {"anything": {"type": "string"}}},
    "find_dish": {"type": "object", "required": ["dish"], "properties": {"dish": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def browser(webmcp_browser):
    return webmcp_browser


@pytest.fixture(scope="module")
def bistro_url():
    with static_site({"/": FORMS_PAGE, "/menu": MENU_PAGE}) as url:
        yield url


def test_a_page_of_declarative_forms_reads_and_answers_alike_in_both_modes(browser, webmcp, bistro_url):
    with WebMCPDriver(bistro_url, browser=browser, webmcp=webmcp, timeout_s=0.5) as driver:
        tab = driver.open(bistro_url + "/")
        tools = driver.tools()
        assert [t.name for t in tools] == list(EXPECTED_SCHEMAS)                # document order
        assert {t.name: t.input_schema for t in tools} == EXPECTED_SCHEMAS
        assert all(not any(t.annotations.values()) for t in tools)             # a form declares no hints
        page = driver.pages[tab]

        booking = {"party": "4", "day": "Friday", "hour": 19, "outside": True}
        assert driver.call("book_table", booking) == {"booked": {"party": 4, "day": "Friday", "hour": 19,
                                                                 "outside": True}}
        assert page.inner_text("#said") == "Booked for 4 on Friday."

        # without toolautosubmit the form is filled and waits for the person; the driver gives up
        assert driver.call("ask_the_chef", {"question": "Is the soup vegan?"}) == {"error": "timeout", "seconds": 0.5}
        assert page.input_value("#ask [name=question]") == "Is the soup vegan?"
        assert page.evaluate("window.events").count("toolcancel:ask_the_chef") == 1

        broken = driver.call("broken_form", {"anything": "x"})
        assert broken["error"] == "page_error" and "without also calling respondWith()" in broken["message"]
        stranger = driver.call("book_table", {**booking, "table": 7})
        assert stranger == {"error": "page_error", "message": 'Input contains a parameter "table" but there is '
                                                              "no such parameter for the tool"}

        # a form that submits to the next page: a navigation, and the next page's form is there
        menu = bistro_url + "/menu?dish=soup"
        assert driver.call("find_dish", {"dish": "soup"}) == {"error": "navigation", "url": menu}
        assert driver.call("order_dish", {"dish": "soup"}) == {"ordered": "soup", "from": "?dish=soup"}
        assert [t.name for t in driver.tools()] == ["order_dish"]
        assert driver.page_errors == [] and driver.refused == []
