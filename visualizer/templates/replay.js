// Replay player for one generation trace. Runs under a CSP that allows only this script (by
// hash): no inline handlers, no network. Model text only ever reaches the page through
// textContent, never innerHTML, so a token that spells an HTML tag stays text.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("trace").textContent);
  var frames = data.frames;
  var genLength = data.gen_length;
  var blockSize = Math.max(1, data.block_size);
  var maskId = data.mask_id;
  var pieces = data.pieces;
  var WS = {" ": "\u2423", "\n": "\u23ce", "\t": "\u21e5", "\r": "\u240d"};

  function visible(text) {
    if (text === "") { return "\u2205"; }
    var out = "";
    for (var i = 0; i < text.length; i++) { out += WS[text[i]] || text[i]; }
    return out;
  }
  function pieceOf(token) {
    var key = String(token);
    return Object.prototype.hasOwnProperty.call(pieces, key) ? pieces[key] : "\u27e8" + key + "\u27e9";
  }
  function el(tag, cls) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    return node;
  }

  // Build the grid once: one block box per block, one cell per position; render() restyles them.
  var grid = document.getElementById("grid");
  var blocks = [];
  var cells = [];
  var breaks = [];
  var numBlocks = Math.max(1, Math.ceil(genLength / blockSize));
  for (var b = 0; b < numBlocks; b++) {
    var box = el("div", "dp-block");
    blocks.push(box);
    grid.appendChild(box);
    for (var p = b * blockSize; p < Math.min((b + 1) * blockSize, genLength); p++) {
      var cell = el("span", "dp-cell dp-mask");
      box.appendChild(cell);
      cells.push(cell);
      var brk = el("span", "dp-break");
      brk.hidden = true;
      box.appendChild(brk);
      breaks.push(brk);
    }
  }

  var scrubber = document.getElementById("scrubber");
  var playButton = document.getElementById("play");
  var speed = document.getElementById("speed");
  var readout = document.getElementById("readout");
  scrubber.max = String(Math.max(0, frames.length - 1));

  function render(index) {
    var frame = frames[index];
    // Last commit per position up to this frame: [round, nfe, confidence].
    var decided = new Array(genLength);
    for (var i = 0; i <= index; i++) {
      var f = frames[i];
      for (var j = 0; j < f.committed.length; j++) {
        var c = f.committed[j];
        if (c[0] >= 0 && c[0] < genLength) { decided[c[0]] = [f.round, f.nfe, c[2]]; }
      }
    }
    var fresh = {};
    for (var k = 0; k < frame.committed.length; k++) { fresh[frame.committed[k][0]] = true; }
    var count = 0;
    for (var pos = 0; pos < genLength; pos++) {
      var cellNode = cells[pos];
      var token = pos < frame.canvas.length ? frame.canvas[pos] : null;
      cellNode.style.opacity = "";
      breaks[pos].hidden = true;
      if (token === null || token === maskId) {
        cellNode.className = "dp-cell dp-mask";
        cellNode.textContent = "\u00b7";
        cellNode.title = "#" + pos + ": undecided";
        continue;
      }
      count++;
      var text = pieceOf(token);
      cellNode.textContent = visible(text);
      breaks[pos].hidden = text.indexOf("\n") < 0;
      var info = decided[pos];
      if (!info) {
        cellNode.className = "dp-cell dp-filled";
        cellNode.title = "#" + pos + ": " + JSON.stringify(text);
      } else {
        cellNode.className = "dp-cell " + (fresh[pos] ? "dp-new" : "dp-done");
        var conf = info[2] === null ? 1 : Math.min(Math.max(info[2], 0), 1);
        cellNode.style.opacity = String(0.35 + 0.65 * conf);
        cellNode.title = "#" + pos + ": " + JSON.stringify(text) + " \u00b7 round " + (info[0] + 1) +
          " \u00b7 NFE " + info[1] + " \u00b7 confidence " + conf.toFixed(2);
      }
    }
    for (var bb = 0; bb < blocks.length; bb++) {
      blocks[bb].className = bb === frame.block ? "dp-block dp-active" : "dp-block";
    }
    var perForward = frame.nfe ? (count / frame.nfe).toFixed(2) : "-";
    readout.textContent = "Frame " + (index + 1) + "/" + frames.length + " \u00b7 round " + (frame.round + 1) +
      " \u00b7 block " + (frame.block + 1) + "/" + numBlocks + " \u00b7 NFE " + frame.nfe + " \u00b7 decided " +
      count + "/" + genLength + " \u00b7 " + perForward + " tokens/forward \u00b7 " + (frame.elapsed_s || 0).toFixed(3) + " s";
    scrubber.value = String(index);
  }

  var current = 0;
  var timer = null;
  function delayAfter(index) {
    // Follow the recorded pace (scaled by speed), clamped so a replay is neither a blur nor a wait.
    var gap = index + 1 < frames.length ? frames[index + 1].elapsed_s - frames[index].elapsed_s : 0;
    var ms = gap > 0 ? gap * 1000 : 250;
    return Math.min(Math.max(ms / Number(speed.value), 16), 2000);
  }
  function stop() {
    if (timer !== null) { clearTimeout(timer); timer = null; }
    playButton.textContent = "Play";
  }
  function tick() {
    if (current >= frames.length - 1) { stop(); return; }
    timer = setTimeout(function () { current++; render(current); tick(); }, delayAfter(current));
  }
  playButton.addEventListener("click", function () {
    if (timer !== null) { stop(); return; }
    if (current >= frames.length - 1) { current = 0; render(current); }
    playButton.textContent = "Pause";
    tick();
  });
  scrubber.addEventListener("input", function () {
    stop();
    current = Number(scrubber.value);
    render(current);
  });
  if (frames.length) {
    current = frames.length - 1;
    render(current);
  } else {
    readout.textContent = "This trace has no frames.";
    playButton.disabled = true;
    scrubber.disabled = true;
  }
})();
