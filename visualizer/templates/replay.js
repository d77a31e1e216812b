// Replay player for one generation trace. Runs under a CSP that allows only this script (by
// hash): no inline handlers, no network. Model text only ever reaches the page through
// textContent, never innerHTML, so a token that spells an HTML tag stays text.
//
// The player derives nothing: what every cell shows at every step comes worked out in the payload
// (visualizer/replay.py replay_steps, from visualizer/cells.py, the live grid's own derivation), as
// the cells that change from one step to the next. It builds the grid once and restyles it.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace").textContent);
  var steps = data.steps;
  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    return node;
  }

  // One block box per block (visualizer/cells.py block_bounds), one cell per position, and the
  // line break a cell whose piece holds a newline shows after it.
  var grid = document.getElementById("grid");
  var blocks = [];
  var cells = [];
  var breaks = [];
  var bounds = data.blocks;
  for (var b = 0; b < bounds.length; b++) {
    var box = el("div", "dp-block");
    blocks.push(box);
    grid.appendChild(box);
    for (var p = bounds[b][0]; p < bounds[b][1]; p++) {
      var cell = el("span", "dp-cell");
      box.appendChild(cell);
      cells.push(cell);
      var brk = el("span", "dp-break");
      brk.hidden = true;
      box.appendChild(brk);
      breaks.push(brk);
    }
  }

  // Every step's full row of cells, from step 0's and each step's changes: [classes, text, title,
  // old, level, label, focus, breaks] (visualizer/cells.py Cell.row).
  var rows = [];
  for (var s = 0; s < steps.length; s++) {
    var row = s > 0 ? rows[s - 1].slice() : new Array(cells.length);
    steps[s].cells.forEach(function (change) { row[change[0]] = change.slice(1); });
    rows.push(row);
  }
  var shown = new Array(cells.length);

  function draw(cellNode, brkNode, c) {
    cellNode.className = c[0];
    cellNode.textContent = c[1];
    if (c[3]) {                                  // a rewritten token: the old piece struck through first
      var struck = el("s", "dp-old");
      struck.setAttribute("aria-hidden", "true");
      struck.textContent = c[3];
      cellNode.textContent = "";
      cellNode.appendChild(struck);
      cellNode.appendChild(document.createTextNode(c[1]));
    }
    cellNode.title = c[2];
    if (c[4] < 1) { cellNode.style.setProperty("--dp-c", String(c[4])); }
    else if (cellNode.style.removeProperty) { cellNode.style.removeProperty("--dp-c"); }
    if (c[5]) { cellNode.setAttribute("aria-label", c[5]); } else { cellNode.removeAttribute("aria-label"); }
    if (c[6]) { cellNode.setAttribute("tabindex", "0"); } else { cellNode.removeAttribute("tabindex"); }
    brkNode.hidden = !c[7];
  }

  var scrubber = document.getElementById("scrubber");
  var playButton = document.getElementById("play");
  var speed = document.getElementById("speed");
  var readout = document.getElementById("readout");
  var roundMs = data.round_ms || 300;
  var last = steps.length - 1;
  // Step 0 is the canvas before the first forward; step i shows frame i.
  scrubber.max = String(last);

  function render(step) {
    var row = rows[step];
    for (var pos = 0; pos < cells.length; pos++) {
      if (shown[pos] !== row[pos]) { draw(cells[pos], breaks[pos], row[pos]); shown[pos] = row[pos]; }
    }
    for (var bb = 0; bb < blocks.length; bb++) {
      blocks[bb].className = bb === steps[step].active ? "dp-block dp-active" : "dp-block";
      blocks[bb].style.display = bb < steps[step].drawn ? "" : "none";
    }
    readout.textContent = steps[step].readout;
    scrubber.value = String(step);
  }

  var current = 0;
  var timer = null;
  function delay() {
    // A fixed pace per round (round_ms at 1x, chosen so a whole replay lasts >= 2 s), scaled by speed.
    return Math.max(roundMs / Number(speed.value || 1), 16);
  }
  function stop() {
    if (timer !== null) { clearTimeout(timer); timer = null; }
    playButton.textContent = "Play";
  }
  function tick() {
    if (current >= last) { stop(); return; }
    timer = setTimeout(function () { current++; render(current); tick(); }, delay());
  }
  playButton.addEventListener("click", function () {
    if (timer !== null) { stop(); return; }
    if (current >= last) { current = 0; render(current); }
    playButton.textContent = "Pause";
    tick();
  });
  scrubber.addEventListener("input", function () {
    stop();
    current = Number(scrubber.value);
    render(current);
  });
  if (last > 0) {
    render(0);
  } else {
    readout.textContent = "This trace has no frames.";
    playButton.disabled = true;
    scrubber.disabled = true;
  }
})();
