// WCAG contrast of every visible text element (tests/e2e/test_browser_watch.py): the text colour, faded by
// every ancestor opacity, over the stacked backgrounds behind it; SVG (plots) and aria-hidden text left out.
() => {
  function parse(c) { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; }
  function lum(c) { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }
  function over(top, bottom) { const a = top[3]; return [0,1,2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]); }
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const bg = parse(getComputedStyle(e).backgroundColor);
      if (bg && bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
    }
    let out = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
    return out;
  }
  function opacity(el) { let o = 1; for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity); return o; }
  const out = [];
  const root = document.querySelector('.gradio-container') || document.body;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  while (walker.nextNode()) {
    const node = walker.currentNode; const el = node.parentElement;
    if (!el || seen.has(el) || !node.textContent.trim()) continue;
    seen.add(el);
    if (el.closest('svg, .js-plotly-plot, [aria-hidden="true"]')) continue;
    const r = el.getBoundingClientRect(); const cs = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || cs.visibility === 'hidden' || el.offsetParent === null) continue;
    const bg = background(el);
    let fg = parse(cs.color); fg = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
    const L1 = lum(fg), L2 = lum(bg);
    const ratio = (Math.max(L1, L2) + 0.05) / (Math.min(L1, L2) + 0.05);
    out.push({ratio: Math.round(ratio * 100) / 100, text: node.textContent.trim().slice(0, 50), tag: el.tagName,
              cls: String(el.className).slice(0, 40), id: (el.closest('[id]') || {}).id || ''});
  }
  return out;
}
