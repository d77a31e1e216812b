"""The page's one script: accessible names and live regions on elements Gradio renders itself.

Gradio gives no attribute hooks for its components, and it mounts a tab's components when the
tab first opens, so a MutationObserver labels each element as it appears: the status lines and
the denoising panels become polite live regions (a screen reader hears a run's progress and its
end), and the icon buttons Gradio leaves unnamed (the arrow of a tool step's card) get a name.
The script runs as Gradio's `js` on page load; it changes attributes only, never content.
"""

from __future__ import annotations

import json

# elem_id -> the attributes it gets (the containers persist; Gradio replaces what is inside)
LIVE_REGIONS = {
    "chat-status": {"role": "status", "aria-live": "polite"},
    "agent-status": {"role": "status", "aria-live": "polite"},
    "compare-status": {"role": "status", "aria-live": "polite"},
    "sessions-status": {"role": "status", "aria-live": "polite"},
    "live-panel": {"aria-live": "polite", "aria-label": "Live denoising of the answer"},
    "agent-panel": {"aria-live": "polite", "aria-label": "Denoising of the current tool call"},
    "compare-diffusion-panel": {"aria-live": "polite", "aria-label": "Denoising of the diffusion model"},
    "compare-baseline-panel": {"aria-live": "polite", "aria-label": "Decoding of the AR baseline"},
    "replay-panel": {"aria-live": "polite", "aria-label": "Replay of the stored generation"},
}
# the arrow of a tool step's card in the Chatbot: a button with an empty name
EXPANDER = ".thought-group .title .arrow button"
EXPANDER_LABEL = "Show or hide this step's call and response"


SCRIPT = """() => {
  const regions = __REGIONS__;
  const label = () => {
    for (const [id, attrs] of Object.entries(regions)) {
      const el = document.getElementById(id);
      if (!el) continue;
      for (const [name, value] of Object.entries(attrs)) {
        if (el.getAttribute(name) !== value) el.setAttribute(name, value);
      }
    }
    for (const button of document.querySelectorAll(__EXPANDER__)) {
      if (!button.getAttribute("aria-label")) {
        button.setAttribute("aria-label", __LABEL__);
        button.setAttribute("title", __LABEL__);
      }
    }
  };
  label();
  new MutationObserver(label).observe(document.body, {childList: true, subtree: true});
}"""


def page_js() -> str:
    """The function Gradio runs on load (launch(js=...))."""
    return (SCRIPT.replace("__REGIONS__", json.dumps(LIVE_REGIONS)).replace("__EXPANDER__", json.dumps(EXPANDER))
            .replace("__LABEL__", json.dumps(EXPANDER_LABEL)))
