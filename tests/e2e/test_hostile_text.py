"""Hostile text through the running app in headless Chromium: Markdown images, raw HTML, a form,
an iframe, a backslash-escaped backtick and links, as a prompt and as the model's answer in Chat,
as an instruction and the final answer in Agent (steps table and verdict), and as words in the
Sessions search (echoed in its status line). Every request the page makes is recorded and any to
another host is aborted; the page must make 0 of them, show 0 elements of the payload's own
(ids `inj-*`, images / frames / forms pointing off the app), run no script and trip no
Content-Security-Policy rule. The control inserts the same payload raw and sees each detector
fire, so a pass means something.

Needs /usr/bin/chromium (CI installs it with apt); skipped with that reason when it is absent.
"""

from __future__ import annotations

from urllib.parse import urlparse

from tests.e2e.app_fakes import Slow, fake_context, running_app
from tests.e2e.chromium import BROWSER_MARKS
from tests.e2e.controls import set_number
from tests.fakes import FakeARBackend, FakeDiffusionBackend
from tests.world.scripted import world_format
from world.format import render_call

EVIL = "127.0.0.2"
# One line (the search box is one line); printable ASCII (the fakes' alphabet); under 320 characters.
PAYLOAD = ('![p](http://127.0.0.2/md.png?q=1) <img id="inj-img" src="http://127.0.0.2/i.png"> '
           '<form id="inj-form" action="http://127.0.0.2/f"><input></form> <iframe id="inj-frame" '
           'src="http://127.0.0.2/fr"></iframe> \\`<b id="inj-bt">x</b>` [a link](http://127.0.0.2/l) END')
AGENT_MARK = "AGENTTASK"
OFF_APP = f"img[src*='{EVIL}'], iframe[src*='{EVIL}'], form[action*='{EVIL}'], image[href*='{EVIL}']"

pytestmark = BROWSER_MARKS


def answer_for(prompt: str) -> str:
    """The fake model: a finish call carrying the payload for the agent, the payload itself in chat."""
    return render_call("finish", {"answer": PAYLOAD}) if AGENT_MARK in prompt else PAYLOAD


class Detectors:
    """Requests (those to other hosts aborted), CSP violations and dialogs of one page."""

    def __init__(self, page, app_url: str) -> None:
        self.page, self.host = page, urlparse(app_url).netloc
        self.requests: list[str] = []
        self.violations: list[str] = []
        self.dialogs: list[str] = []
        page.route("**/*", self._route)
        page.on("console", lambda m: self.violations.append(m.text)
                if "Content Security Policy" in m.text or "Refused to" in m.text else None)
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def _route(self, route) -> None:
        url = route.request.url
        self.requests.append(url)
        if urlparse(url).netloc == self.host:
            route.continue_()
        else:
            route.abort()

    def outside(self) -> list[str]:
        return [u for u in self.requests if urlparse(u).scheme in ("http", "https", "ws", "wss")
                and urlparse(u).netloc != self.host]

    def injected(self) -> int:
        return self.page.locator("[id^='inj-']").count() + self.page.locator(OFF_APP).count()

    def assert_clean(self) -> None:
        assert self.outside() == []
        assert self.injected() == 0
        assert self.violations == [] and self.dialogs == []


def test_hostile_text_in_chat_agent_and_search_fetches_nothing_and_injects_nothing(browser, tmp_path):
    from playwright.sync_api import expect

    agent = world_format(FakeDiffusionBackend(answer_for, max_length=8192, name="fake-bd"))
    backends = {"fake-bd": Slow(agent, 0.005), "fake-ar": FakeARBackend("Hello.", name="fake-ar")}
    ctx = fake_context(tmp_path, backends=backends)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        watch = Detectors(page, url)
        page.goto(url)

        # Chat: the payload as the prompt and as the streamed answer
        set_number(page, "#chat-gen-length", "320")
        set_number(page, "#chat-pace-ms", "0")
        page.locator("#prompt textarea").fill(PAYLOAD)
        page.locator("#send").click()
        expect(page.locator("#chat-status")).to_contain_text("forwards", timeout=60_000)
        page.wait_for_timeout(500)
        watch.assert_clean()
        chat = page.locator("#chatbot")
        expect(chat).to_contain_text('<img id="inj-img" src="http://127.0.0.2/i.png">')
        expect(chat).to_contain_text("END")
        expect(chat.locator("a", has_text="a link").first).to_be_visible()
        assert chat.locator("img").count() == 0

        # Agent: the payload in the instruction, the steps table and the verdict
        page.get_by_role("tab", name="Agent").click()
        page.locator("#agent-instruction textarea").fill(f"{AGENT_MARK} {PAYLOAD}")
        page.locator("#agent-instruction").locator("xpath=ancestor::*[contains(@class, 'tabitem')]").get_by_text(
            "Generation settings").first.click()
        set_number(page, "#agent-gen-length", "512")
        set_number(page, "#agent-pace-ms", "0")
        page.locator("#run-agent").click()
        verdict = page.locator("#agent-verdict")
        expect(verdict).to_contain_text("END", timeout=60_000)
        page.wait_for_timeout(500)
        watch.assert_clean()
        expect(verdict).to_contain_text('<form id="inj-form"')

        # Sessions: the payload as search words, echoed in the status line
        page.get_by_role("tab", name="Sessions").click()
        search = page.locator("#session-search textarea, #session-search input").first
        search.fill(PAYLOAD)
        search.press("Enter")
        expect(page.locator("#sessions-status")).to_contain_text("matching", timeout=30_000)
        page.wait_for_timeout(500)
        watch.assert_clean()
        expect(page.locator("#sessions-status")).to_contain_text('<iframe id="inj-frame"')
        assert page.evaluate("window.__xss") is None
        page.close()
    ctx.close()


def test_control_raw_insertion_trips_every_detector(browser, tmp_path):
    """The payload inserted raw: elements appear, the page's policy refuses the image, and on a
    page without the policy the browser asks for the other host."""
    ctx = fake_context(tmp_path)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page()
        watch = Detectors(page, url)
        page.goto(url)
        page.locator("#prompt").wait_for()
        page.evaluate("html => { const d = document.createElement('div'); d.innerHTML = html; "
                      "document.body.appendChild(d); }", PAYLOAD)
        page.wait_for_timeout(1000)
        assert watch.injected() >= 3
        assert any(EVIL in v for v in watch.violations), watch.violations
        page.close()
    ctx.close()

    bare = browser.new_page()
    watch = Detectors(bare, "http://127.0.0.1:9/")
    bare.set_content(f"<body>{PAYLOAD}</body>")
    bare.wait_for_timeout(1000)
    assert any(EVIL in u for u in watch.outside()), watch.requests
    bare.close()


PAGE_ANSWER = ('```html\n<!DOCTYPE html><html><body><h1>Preview works</h1>'
               '<img id="inj-preview" src="http://127.0.0.2/p.png"></body></html>\n```')


def test_error_toast_and_sandboxed_preview_under_the_policy(browser, tmp_path):
    """A toast quoting markup shows it as text (escaped on its way to the browser only); the
    sandboxed srcdoc preview of an HTML answer still renders under the page's policy, and its
    off-app image is not fetched."""
    from playwright.sync_api import expect

    backends = {"fake-bd": FakeDiffusionBackend(PAGE_ANSWER, name="fake-bd"),
                "fake-ar": FakeARBackend("Hello.", name="fake-ar")}
    ctx = fake_context(tmp_path, backends=backends)
    with running_app(ctx) as (_demo, url):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        watch = Detectors(page, url)
        page.goto(url)
        set_number(page, "#chat-gen-length", "256")
        set_number(page, "#chat-pace-ms", "0")
        page.locator("#prompt textarea").fill("A page, please.")
        page.locator("#send").click()
        expect(page.locator("#chat-status")).to_contain_text("forwards", timeout=60_000)
        page.locator("#export").click()
        preview = page.frame_locator("#export-preview iframe")
        expect(preview.locator("h1")).to_have_text("Preview works", timeout=30_000)
        assert watch.outside() == [] and watch.dialogs == []

        page.get_by_role("tab", name="Models").click()
        name = 'nope <b id="inj-toast">x</b> & it\'s'
        page.locator("#load-name textarea, #load-name input").first.fill(name)
        page.get_by_role("button", name="Load").first.click()
        toast = page.locator('[data-testid="toast-body"]')
        expect(toast).to_contain_text(f"There is no model '{name}'", timeout=20_000)
        assert watch.injected() == 0 and watch.outside() == []
        page.close()
    ctx.close()
