"""Make docs/denoising.gif: a real run of the bundled Sprout-BD, drawn round by round with the
playground's own token grid (visualizer.render_grid), one GIF frame per model forward.

    .venv/bin/python docs/animate.py [--out docs/denoising.gif] [--prompt TEXT] [--ms 300]

Decoding uses the "Show every round" preset (low_confidence, steps = block size: one token per
forward), so every step of a block resolving is a frame. Frames are screenshots of the grid in
headless Chromium (/usr/bin/chromium); Pillow writes the GIF.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["HF_HUB_OFFLINE"] = "1"

PROMPT = "Please add a blue dress in size L to the cart."
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
LIMIT_BYTES = 2 * 1024 * 1024
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>{css}
body {{ margin: 0; padding: 14px; background: #fff; color: #18181b; font-family: system-ui, sans-serif; width: 760px; }}
h1 {{ font-size: 14px; margin: 0 0 8px; font-weight: 600; }}
</style></head><body><h1 id="title"></h1><div id="grid"></div></body></html>"""


def run_sprout(prompt: str):
    """(result, config, ends) of one generation with the teaching preset."""
    import torch

    from engine import catalog
    from engine.generate import run
    from engine.metrics import Ends
    from engine.trace import GenerationConfig

    # One thread: Sprout-BD is small, and on a shared, busy CPU two intra-op threads contend (measured
    # here under load: 0.4-0.6 s per forward with 2 threads, 0.03 s with 1).
    torch.set_num_threads(1)
    backend = catalog.load_backend("sprout-bd", device="cpu")
    config = GenerationConfig(gen_length=32, block_size=16, steps=16, sampler="low_confidence")
    prompt_ids = backend.encode_chat([{"role": "user", "content": prompt}])
    run(backend, prompt_ids, config)                   # warm-up: first-call costs stay out of the shown times
    result = run(backend, prompt_ids, config)
    return result, config, Ends.of(backend)


def frames_as_png(result, config, ends, prompt: str) -> list[bytes]:
    """One PNG per state: round 0 (all masked), then after every forward."""
    from playwright.sync_api import sync_playwright

    from visualizer import GRID_CSS, render_grid

    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 800, "height": 400}, device_scale_factor=1)
        page.set_content(PAGE.format(css=GRID_CSS))
        page.locator("#title").evaluate("(e, t) => { e.textContent = t; }",
                                        f"Sprout-BD · “{prompt}” · low_confidence, one token per forward")
        for upto in range(-1, len(result.frames)):
            shown = result.frames if upto >= 0 else []
            html = render_grid(shown, result.pieces, result.mask_id, config.gen_length, config.block_size,
                               upto=upto if upto >= 0 else None, ends=ends)
            page.locator("#grid").evaluate("(e, h) => { e.innerHTML = h; }", html)   # our own escaped HTML
            shots.append(page.locator("body").screenshot())
        browser.close()
    return shots


def write_gif(shots: list[bytes], out: Path, ms: int) -> int:
    from PIL import Image

    images = [Image.open(io.BytesIO(s)).convert("RGB") for s in shots]
    size = (max(i.width for i in images), max(i.height for i in images))
    frames = []
    for image in images:
        canvas = Image.new("RGB", size, "white")
        canvas.paste(image, (0, 0))
        frames.append(canvas.quantize(colors=64, method=Image.Quantize.MEDIANCUT))
    durations = [ms * 3] + [ms] * (len(frames) - 2) + [ms * 8]      # hold round 0 and the answer longer
    frames[0].save(out, save_all=True, append_images=frames[1:], duration=durations[: len(frames)], loop=0,
                   optimize=True, disposal=1)
    return out.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "denoising.gif"))
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--ms", type=int, default=300, help="milliseconds per round (default 300)")
    args = parser.parse_args()
    result, config, ends = run_sprout(args.prompt)
    shots = frames_as_png(result, config, ends, args.prompt)
    size = write_gif(shots, Path(args.out), args.ms)
    print(f"wrote {args.out}: {len(shots)} frames, {size / 1024:.0f} kB; answer {result.text!r}; "
          f"{result.stats.nfe} forwards")
    if size >= LIMIT_BYTES:
        print(f"error: {args.out} is {size} bytes, over the {LIMIT_BYTES}-byte limit; use a shorter run.",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
