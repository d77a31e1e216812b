"""launch.serve checks that its page answers itself, patiently, instead of Gradio's one 3-second
HEAD request, whose first timeout ends the start (launch.own_start_check)."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gradio as gr
import httpx
import pytest

from launch import own_start_check, serve, wait_served
from tests.e2e.app_fakes import free_port


class Slow(BaseHTTPRequestHandler):
    delay_s = 0.0

    def do_HEAD(self):  # noqa: N802 (http.server's name)
        time.sleep(self.delay_s)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_page_that_comes_up_late_is_waited_for():
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Slow)
    later = threading.Timer(1.0, server.serve_forever)        # nothing listens for the first second
    later.start()
    try:
        started = time.monotonic()
        wait_served(f"http://127.0.0.1:{port}/", within_s=20)
        assert time.monotonic() - started >= 0.9
    finally:
        server.shutdown()
        later.join()
        server.server_close()


def test_a_page_that_never_answers_is_a_sentence_not_a_hang():
    url = f"http://127.0.0.1:{free_port()}/"
    with pytest.raises(RuntimeError, match=r"did not answer within 1 s \(ConnectError\)"):
        wait_served(url, within_s=1)


def test_serve_starts_when_gradios_own_check_would_fail(monkeypatch):
    import gradio.networking

    assert own_start_check(gr.Blocks()) == {"_frontend": False}          # gradio 6 still has the switch
    monkeypatch.setattr(gradio.networking, "url_ok", lambda url: False)  # its check, failing as on a busy machine
    with gr.Blocks() as demo:
        gr.Markdown("hello")
    url = serve(demo, "127.0.0.1", free_port(), block=False)
    try:
        assert httpx.get(url, timeout=10).status_code == 200
    finally:
        demo.close()
