"""Which URLs the WebMCP driver stops: outside_of is handed to the browser as a regex, so a request
to the app's own origin is never intercepted and every other http(s) request is."""

from __future__ import annotations

import pytest

from world.webmcp.driver import origin_of, outside_of


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8123/apps/shop/?session=abc",
    "http://127.0.0.1:8123",
    "http://127.0.0.1:8123?x=1",
    "HTTP://127.0.0.1:8123/upper-case-scheme",
])
def test_the_apps_own_origin_is_not_intercepted(url):
    assert outside_of(origin_of("http://127.0.0.1:8123/apps/")).search(url) is None


@pytest.mark.parametrize("url", [
    "http://127.0.0.2:8123/steal",                  # another host
    "http://127.0.0.1:8124/",                       # another port
    "http://127.0.0.1:81234/",                      # a port that only starts with ours
    "https://127.0.0.1:8123/",                      # another scheme
    "http://127.0.0.1:8123.evil.example/",          # our host and port as a prefix of another host
    "http://127.0.0.1/",                            # the default port is not ours
])
def test_every_other_origin_is_intercepted(url):
    assert outside_of(origin_of("http://127.0.0.1:8123")).search(url)


def test_a_default_port_may_be_written_or_left_out():
    outside = outside_of(origin_of("https://shop.example"))
    assert outside.search("https://shop.example/cart") is None
    assert outside.search("https://shop.example:443/cart") is None
    assert outside.search("https://shop.example:8443/cart")
    assert outside.search("https://shop.example.evil.test/cart")
