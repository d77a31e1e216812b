"""The page's one script: accessible names and live regions on elements Gradio renders itself.

Gradio gives no attribute hooks for its components, and it mounts a tab's components when the
tab first opens, so a MutationObserver labels each element as it appears:
- the status lines become polite live regions (a screen reader hears a run's end and its numbers);
- each denoising panel is a named region holding one persistent, visually hidden live line that
  repeats the panel's head ("live · round 3/16 · block 2/8"). The head itself is redrawn with the
  grid on every update, and a live region that is replaced is not announced; the whole panel made
  live would read every cell at each forward (and costs the browser seconds per run);
- the icon buttons Gradio leaves unnamed (the arrow of a tool step's card) get a name;
- the "Empty value" placeholder of an empty plot or file box, a div Gradio names without a role
  (ARIA forbids a name there: axe's aria-prohibited-attr, serious), becomes a note.
- a click on an answer's version arrow (a link to "#dp-version:depth:delta", app/chat_tree.py)
  goes to the hidden #version-pick box as "depth:delta", and the hidden #version-go button sends
  it (a box's own input event fires on typing only); the link itself goes nowhere.
The script runs as Gradio's `js` on page load; it changes attributes, its own live lines and that
box only.
"""

from __future__ import annotations

import json

from .chat_tree import VERSION_LINK

STATUS_LINES = ("chat-status", "agent-status", "compare-status", "sessions-status")
PANELS = {
    "live-panel": "Live denoising of the answer",
    "agent-panel": "Denoising of the current tool call",
    "compare-diffusion-panel": "Denoising of the diffusion model",
    "compare-baseline-panel": "Decoding of the AR baseline",
    "replay-panel": "Replay of the stored generation",
}
HEAD = ".dp-live-head"             # the panel's first line (app/live.py)
LIVE_LINE = "dp-sr-status"         # the persistent live line's class (app/css.py hides it)
# the arrow of a tool step's card in the Chatbot: a button with an empty name
EXPANDER = ".thought-group .title .arrow button"
EXPANDER_LABEL = "Show or hide this step's call and response"
EMPTY_BOX = "div.empty[aria-label]:not([role])"     # Gradio's "Empty value" placeholder

SCRIPT = """() => {
  const statusLines = __STATUS__, panels = __PANELS__;
  const label = () => {
    for (const id of statusLines) {
      const el = document.getElementById(id);
      if (el && el.getAttribute("aria-live") !== "polite") {
        el.setAttribute("role", "status");
        el.setAttribute("aria-live", "polite");
      }
    }
    for (const [id, name] of Object.entries(panels)) {
      const el = document.getElementById(id);
      if (!el) continue;
      if (el.getAttribute("role") !== "region") {
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", name);
      }
      let line = el.querySelector(":scope > .__LINE__");
      if (!line) {
        line = document.createElement("div");
        line.className = "__LINE__";
        line.setAttribute("role", "status");
        line.setAttribute("aria-live", "polite");
        el.appendChild(line);
      }
      const head = el.querySelector(__HEAD__);
      const text = head ? head.textContent.trim() : "";
      if (line.textContent !== text) line.textContent = text;
    }
    for (const button of document.querySelectorAll(__EXPANDER__)) {
      if (!button.getAttribute("aria-label")) {
        button.setAttribute("aria-label", __LABEL__);
        button.setAttribute("title", __LABEL__);
      }
    }
    for (const box of document.querySelectorAll(__EMPTY__)) box.setAttribute("role", "note");
  };
  label();
  new MutationObserver(label).observe(document.body, {childList: true, subtree: true});
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element && event.target.closest('a[href^="__PICK__"]');
    if (!link) return;
    event.preventDefault();
    event.stopPropagation();
    const box = document.querySelector("#version-pick textarea, #version-pick input");
    if (!box) return;
    box.value = link.getAttribute("href").slice("__PICK__".length) ;
    box.dispatchEvent(new Event("input", {bubbles: true}));
    document.querySelector("#version-go")?.click();
  }, true);
}"""


def page_js() -> str:
    """The function Gradio runs on load (launch(js=...))."""
    values = {"__STATUS__": json.dumps(list(STATUS_LINES)), "__PANELS__": json.dumps(PANELS),
              "__LINE__": LIVE_LINE, "__HEAD__": json.dumps(HEAD), "__EXPANDER__": json.dumps(EXPANDER),
              "__LABEL__": json.dumps(EXPANDER_LABEL), "__EMPTY__": json.dumps(EMPTY_BOX),
              "__PICK__": VERSION_LINK.split("{", 1)[0]}
    script = SCRIPT
    for token, value in values.items():
        script = script.replace(token, value)
    return script
