"""The driver keeps a page's WebSockets and WebRTC inside the origin, in both WebMCP modes (issue
47, point 5): a WebSocket to another port, from the page or from its worker, never connects, and
WebRTC sends no STUN packet to another port; each attempt is in `refused`, and a call that made one
is an outside_origin observation. A WebSocket to the origin itself is let through.

Listeners on loopback stand in for the outside: a TCP port that counts connections and a UDP port
that counts packets. Needs /usr/bin/chromium; skipped with that reason when it is absent.
"""

from __future__ import annotations

import socket
import threading

import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.e2e.chromium import BROWSER_MARKS
from world.webapps.server import serve_app_in_thread
from world.webmcp.driver import FLAGS, WebMCPDriver

pytestmark = BROWSER_MARKS

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Chatty</title></head><body><script>
const opened = url => new Promise(resolve => {
  const socket = new WebSocket(url);
  socket.onopen = () => { socket.send("hello"); resolve("open"); };
  socket.onerror = () => resolve("error");
  setTimeout(() => resolve("no answer"), 2000);
});
const reg = (name, execute) => document.modelContext.registerTool({name, description: name,
  inputSchema: {type: "object", properties: {url: {type: "string"}}}, execute});
reg("socket_home", async () => ({socket: await opened(`ws://${location.host}/echo`)}));
reg("socket_out", async ({url}) => ({socket: await opened(url)}));
reg("socket_from_worker", async ({url}) => {
  const source = `const s = new WebSocket(${JSON.stringify(url)});
    s.onopen = () => postMessage("open"); s.onerror = () => postMessage("error");`;
  const worker = new Worker(URL.createObjectURL(new Blob([source], {type: "text/javascript"})));
  return {socket: await new Promise(resolve => { worker.onmessage = e => resolve(e.data);
                                                 setTimeout(() => resolve("no answer"), 2000); })};
});
reg("stun_out", async ({url}) => {
  try {
    const peer = new RTCPeerConnection({iceServers: [{urls: url}]});
    peer.createDataChannel("x");
    await peer.setLocalDescription(await peer.createOffer());
    await new Promise(resolve => setTimeout(resolve, 1000));
    return {webrtc: peer.iceGatheringState};
  } catch (error) { return {webrtc: error.name}; }
});
document.body.dataset.ready = "true";
</script></body></html>"""


class Outside:
    """A TCP port and a UDP port on loopback that count what reaches them."""

    def __init__(self) -> None:
        self.connections, self.packets = 0, 0
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        for serve in (self._accept, self._receive):
            threading.Thread(target=serve, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.tcp.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def _receive(self) -> None:
        while True:
            try:
                self.udp.recvfrom(2048)
            except OSError:
                return
            self.packets += 1

    def close(self) -> None:
        self.tcp.close()
        self.udp.close()


@pytest.fixture(scope="module")
def browser(webmcp_browser):
    return webmcp_browser


@pytest.fixture(scope="module")
def chatty_url():
    app = Starlette(routes=[Route("/", lambda _r: HTMLResponse(PAGE))])
    with serve_app_in_thread(app) as url:
        yield url


@pytest.fixture
def outside():
    listening = Outside()
    yield listening
    listening.close()


def test_the_launch_flags_send_no_udp_outside_a_proxy():
    assert "--webrtc-ip-handling-policy=disable_non_proxied_udp" in FLAGS


def test_websockets_and_webrtc_elsewhere_are_refused_and_reported(browser, webmcp, chatty_url, outside):
    socket_url = f"ws://127.0.0.1:{outside.tcp.getsockname()[1]}/listen"
    stun_url = f"stun:127.0.0.1:{outside.udp.getsockname()[1]}"
    with WebMCPDriver(chatty_url, browser=browser, webmcp=webmcp) as driver:
        driver.open(chatty_url + "/")
        # the origin's own is let through (this server speaks no WebSocket, so it fails there, unreported)
        assert driver.call("socket_home", {}) == {"socket": "error"} and driver.refused == []
        assert driver.call("socket_out", {"url": socket_url}) == {"error": "outside_origin", "url": socket_url}
        assert driver.call("socket_from_worker", {"url": socket_url + "/worker"}) == {
            "error": "outside_origin", "url": socket_url + "/worker"}
        assert driver.call("stun_out", {"url": stun_url}) == {"error": "outside_origin", "url": f"webrtc:{stun_url}"}
        assert driver.refused == [socket_url, socket_url + "/worker", f"webrtc:{stun_url}"]
    assert (outside.connections, outside.packets) == (0, 0)


def test_webrtc_in_a_frame_made_by_script_is_refused_too(browser, webmcp, chatty_url, outside):
    stun_url = f"stun:127.0.0.1:{outside.udp.getsockname()[1]}"
    with WebMCPDriver(chatty_url, browser=browser, webmcp=webmcp) as driver:
        page = driver.pages[driver.open(chatty_url + "/")]
        made = page.evaluate("""url => { const frame = document.createElement("iframe"); document.body.append(frame);
          try { new frame.contentWindow.RTCPeerConnection({iceServers: [{urls: url}]}); return "made"; }
          catch (error) { return error.name; } }""", stun_url)
        assert made == "NotAllowedError" and driver.refused == [f"webrtc:{stun_url}"]
    assert outside.packets == 0
