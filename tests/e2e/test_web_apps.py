"""The shop and the office in headless Chromium: a person buys by hand (search, add, guest checkout),
every tool called through WebMCP answers what the built-in world answers while the page shows the
change, benchmark tasks give the same transcripts through the pages as in the world, navigating
changes the tool list, and hostile strings stored in the world run no script.

Needs /usr/bin/chromium; skipped with that reason when it is absent. DP_SCREENSHOTS=folder saves
a picture of each app after its test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from engine.trace import GenerationConfig
from tests.e2e.chromium import BROWSER_MARKS
from tests.world.scripted import wrong_tool, wrong_value
from world.agent import run_episode
from world.format import full_system_prompt
from world.oracle import OracleModel
from world.start import world_for
from world.task_sets import load_heldout_tasks
from world.tools import TOOLS, TOOLS_BY_NAME, call_tool
from world.webapps.apps import APP_TOOLS, PARAMETER_DESCRIPTIONS
from world.webapps.server import serve_in_thread
from world.webapps.sessions import WorldSessions
from world.webmcp.driver import PageToolsOf, WebMCPDriver
from world.webmcp.venue import PageVenue

pytestmark = BROWSER_MARKS
TASKS = load_heldout_tasks()
HINTS = ("readOnlyHint", "consequentialHint", "untrustedContentHint")
HOSTILE = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


def task_of(intent: str) -> dict:
    return next(t for t in TASKS if t["intent"] == intent)


def screenshot(page, name: str) -> None:
    folder = os.environ.get("DP_SCREENSHOTS")
    if folder:
        page.screenshot(path=os.path.join(folder, name), full_page=True)


@pytest.fixture(scope="module")
def apps() -> Iterator[tuple[WorldSessions, str]]:
    sessions = WorldSessions()
    with serve_in_thread(sessions) as url:
        yield sessions, url


@pytest.fixture(scope="module")
def browser(webmcp_browser):
    """Every test here runs on the browser's own WebMCP and on the polyfill (conftest's `webmcp`)."""
    return webmcp_browser


@pytest.fixture
def driver(apps, browser, webmcp) -> Iterator[WebMCPDriver]:
    with WebMCPDriver(apps[1], browser=browser, webmcp=webmcp) as opened:
        assert opened.webmcp == webmcp
        yield opened
        assert opened.page_errors == []


def test_a_person_finds_a_product_adds_it_and_checks_out_as_a_guest(browser, apps):
    from playwright.sync_api import expect

    sessions, url = apps
    task = task_of("shop_buy")
    slots, world = task["slots"], world_for(task)
    session = sessions.add(world)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/apps/shop/?session={session}")
    page.wait_for_selector("body[data-ready]", state="attached")
    search = page.locator("#search")
    search.locator("[name=query]").fill(slots["style"])
    search.locator("[name=color]").select_option(slots["color"])
    search.locator("[name=size]").select_option(slots["size"])
    search.get_by_role("button", name="Search").click()
    # the search's own rows: the browse table before it shows a row that matches as well, and
    # a quantity typed there is lost when the results are drawn
    expect(page.locator("#search-status")).to_contain_text(f'found for "{slots["style"]}"')
    match = page.locator("#results tbody tr").filter(has=page.locator("td:nth-child(2)", has_text=slots["color"])) \
        .filter(has=page.locator("td:nth-child(3)", has_text=slots["size"]))
    expect(match).to_have_count(1)
    match.locator("input.qty").fill(str(slots["qty"]))
    match.get_by_role("button", name="Add").click()
    expect(page.locator("#cart-count")).to_have_text(str(slots["qty"]))
    checkout = page.locator("#checkout")
    for field in ("name", "email", "address"):
        checkout.locator(f"[name={field}]").fill(slots[field])
    expect(page.locator("#cart-lines tbody tr")).to_have_count(1)
    screenshot(page, "shop-cart.png")
    checkout.get_by_role("button", name="Place order").click()
    expect(page.locator("#confirmation")).to_be_visible()
    order = world.orders[0]
    expect(page.locator("#confirmation-text")).to_contain_text(f"Order {order['id']} is placed: ${order['total']}")
    expect(page.locator("#cart-count")).to_have_text("0")
    assert world.end_state() == _gold_end_state(task)
    screenshot(page, "shop.png")
    page.close()


def _gold_end_state(task: dict) -> dict:
    from world.grader import gold_end_state

    return gold_end_state(task)


def test_every_tool_through_webmcp_answers_as_the_world_and_the_page_shows_it(apps, driver):
    from playwright.sync_api import expect

    sessions, url = apps
    shop_task, office_task = task_of("shop_buy"), task_of("office_customer")
    world = world_for(shop_task).apply(office_task["world"]["setup"])
    twin = world.clone()
    session = sessions.add(world)
    shop = driver.pages[driver.open(f"{url}/apps/shop/?session={session}")]
    office = driver.pages[driver.open(f"{url}/apps/office/?session={session}")]
    slots = shop_task["slots"]
    product = next(a for a in shop_task["gold_actions"] if a["name"] == "add_to_cart")["arguments"]
    customer = office_task["gold_actions"][0]["arguments"]["name"]
    customer_id = next(cid for cid, c in world.customers.items() if c["name"] == customer)
    course = next(iter(world.courses))
    activity = next(iter(world.activities))
    guest = {"name": slots["name"], "email": slots["email"], "address": slots["address"]}
    shown = {  # call -> (the element that shows it, what it must contain, or a row count)
        "checkout_guest:empty": (shop.locator("#checkout-status"), "cart is empty"),
        "search_products": (shop.locator("#results tbody tr"), None),
        "add_to_cart": (shop.locator("#cart-count"), str(product["quantity"])),
        "add_to_cart:unknown": (shop.locator("#add-status"), "unknown product"),
        "view_cart": (shop.locator("#cart-total"), None),
        "checkout_guest": (shop.locator("#confirmation-text"), None),
        "get_customer": (office.locator("[data-result=get_customer]"), customer_id),
        "create_invoice": (office.locator("#invoice-list"), None),
        "find_invoices": (office.locator("#invoice-results tbody tr"), None),
        "sum_amounts": (office.locator("[data-result=sum_amounts]"), "The sum is 12.75"),
        "register_course": (office.locator("#registration-list"), "Ivo Test"),
        "get_activity_status": (office.locator("[data-result=get_activity_status]"), None),
    }
    calls = [("checkout_guest:empty", guest),
             ("search_products", {"query": slots["style"], "color": slots["color"], "size": slots["size"]}),
             ("add_to_cart", product), ("add_to_cart:unknown", {**product, "product_id": "P0Z0"}),
             ("view_cart", {}), ("checkout_guest", guest),
             ("get_customer", {"name": customer}),
             ("create_invoice", {"customer_id": customer_id, "amount": 120.5, "description": "web design"}),
             ("find_invoices", {"customer_id": customer_id, "status": "unpaid"}),
             ("sum_amounts", {"amounts": [10, 2.75]}),
             ("register_course", {"student_name": "Ivo Test", "course_code": course}),
             ("get_activity_status", {"activity_id": activity})]
    called = set()
    for key, arguments in calls:
        name = key.split(":")[0]
        called.add(name)
        answer = driver.call(name, arguments)
        assert answer == call_tool(twin, name, arguments), key
        where, text = shown[key]
        if key == "search_products":
            expect(where).to_have_count(len(answer))
        elif key == "view_cart":
            expect(where).to_have_text(f"${answer['total']}")
        elif key == "checkout_guest":
            expect(where).to_contain_text(f"Order {answer['order']} is placed: ${answer['total']}")
            expect(shop.locator("#cart-count")).to_have_text("0")
        elif key == "create_invoice":
            expect(where).to_contain_text(answer["id"])
        elif key == "find_invoices":
            expect(where).to_have_count(len(answer) + 1)          # + the "add up these amounts" row
        elif key == "get_activity_status":
            expect(where).to_have_text(f"Activity {activity} is {answer['status']}.")
        else:
            expect(where).to_contain_text(text)
    assert called == {n for names in APP_TOOLS.values() for n in names}
    assert world.end_state() == twin.end_state() and world.courses == twin.courses
    # the form shows what the agent typed: the failed checkout left the guest's name in its field
    screenshot(office, "office.png")


def test_the_pages_validate_inputs_against_the_schema_too(apps, driver):
    sessions, url = apps
    world = world_for(task_of("shop_add"))
    before = world.end_state()
    session = sessions.add(world)
    page = driver.pages[driver.open(f"{url}/apps/shop/?session={session}")]
    answer = page.evaluate("""() => window.__webmcpConsumer.call('add_to_cart',
        {product_id: 'P1', size: 'XXL', quantity: 0, colour: 'red'})""")["value"]
    assert answer["error"] == "invalid input"
    assert len(answer["problems"]) == 3          # the size, the quantity, the extra argument
    assert world.end_state() == before


def test_benchmark_tasks_through_the_pages_give_the_worlds_transcripts(browser, webmcp):
    one_per_intent = list({t["intent"]: t for t in TASKS}.values())
    config = GenerationConfig()

    def comparable(transcript) -> dict:
        out = transcript.to_dict()
        out["seconds"] = out["open_s"] = 0.0            # times differ; the pages take time to open
        for step in out["steps"]:
            step["seconds"] = 0.0
        out["messages"] = out["messages"][1:]            # the system prompt: below
        return out

    with PageVenue(browser=browser, webmcp=webmcp) as venue:
        for task in one_per_intent:
            for model in (OracleModel, wrong_tool, wrong_value):
                built_in = run_episode(None, task, config, generate_fn=model(task), system="full")
                paged = run_episode(None, task, config, generate_fn=model(task), system="full", pages=venue)
                assert comparable(paged) == comparable(built_in), (task["id"], model.__name__)
                assert paged.success == (model is OracleModel)
                # the prompt lists the tools as the pages registered them: the registry's, in its order,
                # but the checkout form's schema as the browser reads it from the form's fields
                listed = PageToolsOf(venue.driver).tools.tools
                assert paged.messages[0]["content"] == full_system_prompt(listed)
                assert [t["name"] for t in listed] == [t["name"] for t in TOOLS]
        assert venue.driver.page_errors == [] and venue.driver.refused == []


SNAPSHOT = """() => ({
  url: location.pathname + location.search + location.hash,
  text: document.body.innerText,
  values: [...document.querySelectorAll("input, select")].map(c => `${c.name}=${c.value}`),
  hidden: [...document.querySelectorAll("section, #page-error")].map(s => `${s.id}:${s.hidden}`),
  highlighted: document.querySelectorAll(".flash").length,
})"""


def test_the_next_task_starts_over_in_place_as_a_fresh_load_shows_it(browser, webmcp):
    """The venue's tabs go to the next task's session without a reload, and then show exactly
    what a new tab loaded on that session shows: no search, status, form value or view left over."""
    config = GenerationConfig()
    with PageVenue(browser=browser, webmcp=webmcp, lazy=False) as venue:
        task = task_of("shop_buy")                                     # search, add, check out
        assert run_episode(None, task, config, generate_fn=OracleModel(task), system="full", pages=venue).success
        customer = sorted(world_for(task).customers)[0]
        assert isinstance(venue.driver.call("find_invoices", {"customer_id": customer}), list)
        assert "#/order/" in venue.driver.pages[0].url                 # an order placed; invoices listed
        for page in venue.driver.pages:
            page.evaluate("window.__sameDocument = true")
        nxt = task_of("shop_add")
        venue.episode(nxt, world_for(nxt))
        fresh = browser.new_page()
        try:
            for page in venue.driver.pages:
                assert page.evaluate("window.__sameDocument === true"), "the tab was reloaded"
                fresh.goto(page.url)
                fresh.wait_for_selector("body[data-ready]", state="attached")
                assert page.evaluate(SNAPSHOT) == fresh.evaluate(SNAPSHOT)
        finally:
            fresh.close()
        assert venue.driver.page_errors == []


def test_a_tab_starts_over_in_its_first_calls_round_trip_and_shows_that_calls_world(browser, webmcp):
    """The venue's default: a task's tabs go to its session only when a call runs in them, drawn by
    that call's answer; a tab the task never calls is left as it was."""
    config = GenerationConfig()
    with PageVenue(browser=browser, webmcp=webmcp) as venue:
        first, nxt = task_of("shop_buy"), task_of("office_customer")
        assert run_episode(None, first, config, generate_fn=OracleModel(first), system="full", pages=venue).success
        shop, office = venue.driver.pages
        shop_before = shop.url
        world = world_for(nxt)
        venue.episode(nxt, world)
        assert (shop.url, office.url) == (shop_before, office.url)                # nothing moved yet
        customer = next(iter(world.customers.values()))["name"]
        answer = venue.driver.call("get_customer", {"name": customer})
        assert answer == call_tool(world.clone(), "get_customer", {"name": customer})
        assert office.url.endswith(f"session={venue._session}") and shop.url == shop_before
        names = [row.split("\t")[0] for row in office.inner_text("#customer-list tbody").splitlines()]
        assert names == [c["name"] for _, c in sorted(world.customers.items())]   # the new world, drawn
        assert venue.driver.page_errors == []


def test_a_tab_that_cannot_start_over_is_loaded_instead(apps, driver, monkeypatch):
    """Another page in the tab, or a session the page cannot draw: open_tabs loads the URL, and
    the load shows what is wrong (and never gets ready, which open_tabs reports)."""
    from playwright.sync_api import TimeoutError as PageTimeout

    from world.webmcp import driver as driver_module

    sessions, url = apps
    session = sessions.add()
    driver.open_tabs([f"{url}/apps/shop/?session={session}"])
    driver.pages[0].evaluate("window.__sameDocument = true")
    driver.open_tabs([f"{url}/apps/office/?session={session}"], start_over=True)          # another page
    assert driver.pages[0].evaluate("document.body.dataset.app") == "office"
    driver.pages[0].evaluate("window.__sameDocument = true")
    monkeypatch.setattr(driver_module, "READY_S", 1.0)
    with pytest.raises(PageTimeout):
        driver.open_tabs([f"{url}/apps/office/?session=gone"], start_over=True)          # no such session
    page = driver.pages[0]
    assert page.evaluate("window.__sameDocument === undefined")
    page.wait_for_selector("#page-error:not([hidden])")
    assert "does not exist" in page.inner_text("#page-error") and page.url.endswith("session=gone")


def test_navigating_changes_the_tool_list(apps, driver):
    sessions, url = apps
    session = sessions.add()
    tab = driver.open(f"{url}/apps/shop/?session={session}")
    tools = driver.tools()
    assert [t.name for t in tools] == list(APP_TOOLS["shop"])
    hinted = {hint: {t.name for t in tools if t.annotations.get(hint)} for hint in HINTS}
    assert hinted == {"readOnlyHint": {"search_products", "view_cart"},
                      "consequentialHint": {"add_to_cart"},             # checkout_guest is a form: no hints
                      "untrustedContentHint": set()}
    for tool in tools[:-1]:                                              # the schemas, as the page gave them
        assert tool.input_schema == TOOLS_BY_NAME[tool.name]["inputSchema"], tool.name
    checkout = tools[-1]                                                 # read from the declarative form
    registry = TOOLS_BY_NAME["checkout_guest"]["inputSchema"]
    assert checkout.input_schema == {"type": "object", "required": registry["required"], "properties": {
        key: {"type": "string", "description": PARAMETER_DESCRIPTIONS["checkout_guest"][key]}
        for key in registry["properties"]}}
    page = driver.pages[tab]
    page.click("#to-office")
    page.wait_for_selector("body[data-app=office][data-ready]", state="attached")
    tools = driver.tools()
    assert [t.name for t in tools] == list(APP_TOOLS["office"])
    assert {t.name for t in tools if t.annotations["consequentialHint"]} == {"create_invoice", "register_course"}
    assert {t.name for t in tools if t.annotations["untrustedContentHint"]} == {"get_customer"}
    assert all(t.input_schema == TOOLS_BY_NAME[t.name]["inputSchema"] for t in tools)
    assert page.evaluate("window.__webmcpConsumer.changes") >= 1            # toolchange fired on the new page


def test_a_browser_with_only_the_older_provide_context_api_gets_the_same_tools(apps, browser, webmcp):
    sessions, url = apps
    # the older API: navigator.modelContext with provideContext, and no document.modelContext.registerTool
    older = """const nav = navigator.modelContext;
      Object.defineProperty(Document.prototype, 'modelContext', {configurable: true, get: () => undefined});
      if (nav?.registerTool) Object.defineProperty(nav, 'registerTool', {value: undefined});"""
    with WebMCPDriver(url, browser=browser, init_scripts=(older,), webmcp=webmcp) as driver:
        world = world_for(task_of("shop_add"))
        twin = world.clone()
        driver.open(f"{url}/apps/shop/?session={sessions.add(world)}")
        assert [t.name for t in driver.tools()] == list(APP_TOOLS["shop"])
        arguments = {"query": task_of("shop_add")["slots"]["style"]}
        assert driver.call("search_products", arguments) == call_tool(twin, "search_products", arguments)


def test_hostile_world_strings_are_shown_as_text_and_run_no_script(apps, driver):
    from playwright.sync_api import expect

    sessions, url = apps
    world = world_for(task_of("office_customer"))
    product = next(iter(world.products.values()))
    product["style"] = HOSTILE
    world.customers["C999"] = {"name": "Eve " + HOSTILE, "email": HOSTILE}
    world.invoices["V999"] = {"customer": "C999", "amount": 5, "status": "unpaid", "description": HOSTILE}
    world.activities["A999"] = HOSTILE
    world.courses[HOSTILE] = 3
    session = sessions.add(world)
    dialogs: list[str] = []
    shop = driver.pages[driver.open(f"{url}/apps/shop/?session={session}")]
    office = driver.pages[driver.open(f"{url}/apps/office/?session={session}")]
    for page in (shop, office):
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    answer = driver.call("get_customer", {"name": "Eve " + HOSTILE})
    assert answer == {"id": "C999", "email": HOSTILE}
    assert driver.call("get_activity_status", {"activity_id": "A999"}) == {"status": HOSTILE}
    assert driver.call("register_course", {"student_name": HOSTILE, "course_code": HOSTILE}) == {"ok": True}
    driver.call("add_to_cart", {"product_id": next(iter(world.products)), "size": next(iter(product["stock"])),
                                "quantity": 1})
    driver.call("checkout_guest", {"name": HOSTILE, "email": "a@b.c", "address": HOSTILE})
    expect(office.locator("[data-result=get_customer]")).to_contain_text(HOSTILE)
    expect(office.locator("#invoice-list")).to_contain_text(HOSTILE)
    expect(shop.locator("#confirmation-text")).to_contain_text(HOSTILE)
    shop.goto(shop.url.split("#")[0])
    shop.wait_for_selector("body[data-ready]", state="attached")
    expect(shop.locator("#results")).to_contain_text(HOSTILE)
    for page in (shop, office):
        assert page.evaluate("window.__xss") is None
        assert page.locator("main img, main script").count() == 0
    assert dialogs == []


def test_the_playground_serves_the_apps_with_their_own_policy_and_its_origin_rule(browser, tmp_path):
    import urllib.request

    from tests.e2e.app_fakes import fake_context, running_app
    from world.webapps.server import PAGE_POLICY

    with running_app(fake_context(tmp_path)) as (_demo, url):
        base = url.rstrip("/")
        page = browser.new_page()
        answer = page.goto(f"{base}/apps/office/")
        assert answer.headers["content-security-policy"] == PAGE_POLICY     # not the playground's, with its eval
        page.wait_for_selector("body[data-ready]", state="attached")
        assert "session=" in page.url and page.locator("#customer-list tbody tr").count() > 0
        assert "'nonce-" in page.goto(base + "/").headers["content-security-policy"]   # the playground keeps its own
        page.close()
        foreign = urllib.request.Request(f"{base}/apps/api/sessions", data=b"{}", method="POST",
                                         headers={"content-type": "application/json", "origin": "http://evil.test"})
        try:
            urllib.request.urlopen(foreign, timeout=10)
            raise AssertionError("a page of another origin made a session")
        except urllib.error.HTTPError as refused:
            assert refused.code == 403
