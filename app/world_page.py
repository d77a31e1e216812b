"""The world a tab acts on, shown as its web pages (world/webapps/) beside the denoising panel.

Each (browser session, tab) has one web-app session id; the tab's current World is kept under
it in the playground's page sessions (app/web_apps.py serves them at /apps/), so the frame
beside the panel shows the very World the tool calls change, and the person can browse it (or
open it in a tab of its own) to write requests about what is there. After a tool call the frame
reloads on the app and view the call belongs to: the cart after add_to_cart, the order after a
checkout, the office after an office tool.

The pages are the project's own (their own Content-Security-Policy, world strings escaped as
text: world/webapps/pages/), so the frame is not sandboxed; what the model writes never
becomes a page.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from html import escape
from typing import Any
from urllib.parse import quote

from world.state import World
from world.webapps.apps import app_of
from world.webapps.sessions import MAX_SESSIONS, WorldSessions

FRAME_HEIGHT_PX = 380             # app/css.py keeps this much room before the frame arrives
# what the frame's place holds until the page's load event fills it (same room, app/css.py)
WAITING_HTML = '<div class="dp-world-page"><p class="dp-world-head">The world\'s web pages open here…</p></div>'


class WorldPages:
    """(browser session, tab) -> its web-app session id, over the page sessions the server reads."""

    def __init__(self, sessions: WorldSessions | None = None, limit: int = MAX_SESSIONS) -> None:
        self.sessions = sessions if sessions is not None else WorldSessions()
        self._ids: OrderedDict[tuple, str] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()
        self._shown = 0                # a counter in the frame's URL: a new value reloads the page

    def session_for(self, key: tuple) -> str:
        """The web-app session id of `key` (made on first use; unguessable)."""
        with self._lock:
            session_id = self._ids.get(key)
            if session_id is None:
                session_id = self._ids[key] = secrets.token_urlsafe(12)
                while len(self._ids) > self._limit:
                    self._ids.popitem(last=False)
            self._ids.move_to_end(key)
            return session_id

    def show(self, key: tuple, world: World, call: dict[str, Any] | None = None, result: Any = None,
             owner: str = "conversation") -> str:
        """Keep `world` under key's session and return the frame that shows it, on the page of
        `call` (the latest tool call, with its `result`) or the shop; `owner` says whose world it is."""
        self.sessions.add(world, self.session_for(key))
        return self.frame(key, call, result, owner)

    def frame(self, key: tuple, call: dict[str, Any] | None = None, result: Any = None,
              owner: str = "conversation") -> str:
        """The frame on key's session as its World is now (the tool calls run in the pages change
        it there, so it is read, never replaced), on the page of `call`."""
        session_id = self.session_for(key)
        with self._lock:
            self._shown += 1
            stamp = self._shown
        app, view = page_for(call, result)
        return frame_html(session_id, app, view, stamp, owner)


def page_for(call: dict[str, Any] | None, result: Any = None) -> tuple[str, str]:
    """(app, hash view) that shows what `call` did: the shop's cart or order, else the app's front page."""
    name = (call or {}).get("name", "")
    app = app_of(name) or "shop"
    if name in ("add_to_cart", "view_cart"):
        return app, "#/cart"
    if name == "checkout_guest" and isinstance(result, dict) and result.get("order"):
        return app, f"#/order/{quote(str(result['order']), safe='')}"
    return app, ""


def frame_html(session_id: str, app: str, view: str, stamp: int, owner: str = "conversation") -> str:
    """The frame on /apps/<app>/ of the session, with links to both apps in a tab of their own."""
    sid = quote(session_id, safe="")
    src = f"/apps/{app}/?session={sid}&v={stamp}{view}"
    links = " · ".join(f'<a href="/apps/{name}/?session={sid}" target="_blank" rel="noopener">{label}</a>'
                       for name, label in (("shop", "the shop"), ("office", "the office")))
    return (f'<div class="dp-world-page" data-app="{escape(app)}" data-session="{escape(sid)}">'
            f'<p class="dp-world-head">The world this {escape(owner)} acts on, as web pages: browse it to see what '
            f'is there, or open {links} in a tab of its own. It follows each tool call.</p>'
            f'<iframe src="{escape(src)}" title="The {escape(app)} page of this {escape(owner)}\'s world" '
            f'height="{FRAME_HEIGHT_PX}" referrerpolicy="same-origin"></iframe></div>')
