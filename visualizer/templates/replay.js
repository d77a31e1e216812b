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
  // The glyphs a cell draws come with the trace (visualizer/pieces.py GLYPHS): one table for the
  // live grid and this player.
  var G = data.glyphs;
  var WS = G.whitespace;

  function visible(text) {
    if (text === "") { return G.empty; }
    var out = "";
    for (var i = 0; i < text.length; i++) {
      out += Object.prototype.hasOwnProperty.call(WS, text[i]) ? WS[text[i]] : text[i];
    }
    return out;
  }
  function pieceOf(token) {
    var key = String(token);
    return Object.prototype.hasOwnProperty.call(pieces, key) ? pieces[key] : G.unknown[0] + key + G.unknown[1];
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
  // Where the engine decoded each block (visualizer/grid.py block_bounds: aligned blocks make
  // the first one shorter); even blocks from 0 for a payload without them.
  var bounds = data.blocks || [];
  if (!bounds.length) {
    for (var start = 0; start < Math.max(genLength, 1); start += blockSize) {
      bounds.push([start, Math.min(start + blockSize, genLength)]);
    }
  }
  var numBlocks = bounds.length;
  for (var b = 0; b < numBlocks; b++) {
    var box = el("div", "dp-block");
    blocks.push(box);
    grid.appendChild(box);
    for (var p = bounds[b][0]; p < bounds[b][1]; p++) {
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
  var eos = {};
  (data.eos_ids || []).forEach(function (t) { eos[t] = true; });
  var padId = data.pad_id === undefined ? null : data.pad_id;
  var labels = data.labels || {};
  var roundMs = data.round_ms || 300;
  // Step 0 is the canvas before the first forward (all masked); step i shows frame i.
  scrubber.max = String(frames.length);

  // Answer positions of a canvas: before its first EOS, not pad, not mask (engine/metrics.py).
  function answerOf(canvas) {
    var answer = {};
    for (var i = 0; i < canvas.length; i++) {
      if (eos[canvas[i]]) { break; }
      if (canvas[i] !== padId && canvas[i] !== maskId) { answer[i] = true; }
    }
    return answer;
  }
  function count(set) { return Object.keys(set).length; }

  // A uniform-noise trace (DiffusionGemma: frames carry `noise`) has no masks: each step shows the
  // canvas as the model reads it next, accepted tokens in full, the rest random and faint
  // (visualizer/noise_grid.py draws the same).
  var noiseTrace = frames.some(function (f) { return !!f.noise; });
  var STOP_WORDS = {"max_steps": "ended by the step cap (max denoising steps)",
                    "stable_confident": "ended early: draft stable and mean entropy below the confidence threshold"};
  function setCell(cellNode, cls, text, title, old) {
    cellNode.className = cls;
    cellNode.textContent = "";
    if (old !== undefined) {
      var struck = el("s", "dp-old");
      struck.setAttribute("aria-hidden", "true");
      struck.textContent = visible(old);
      cellNode.appendChild(struck);
    }
    cellNode.appendChild(document.createTextNode(visible(text)));
    cellNode.title = title;
  }
  function renderNoise(step) {
    var frame = step > 0 ? frames[step - 1] : null;
    var noise = frame ? frame.noise : null;
    var before = step > 1 && frames[step - 2].block === frame.block ? frames[step - 2].noise : null;
    var acceptedBefore = {};
    if (before) { before.accepted.forEach(function (p) { acceptedBefore[p] = before.noisy[p - before.start]; }); }
    var accepted = {}, changed = {};
    if (noise) {
      noise.accepted.forEach(function (p) { accepted[p] = true; });
      noise.changed.forEach(function (p) { changed[p] = true; });
    }
    var canvas = frame ? frame.canvas : [];
    var answer = answerOf(canvas);
    var decidedTokens = 0;
    for (var pos = 0; pos < cells.length; pos++) {
      var cellNode = cells[pos];
      breaks[pos].hidden = true;
      if (!frame || pos >= canvas.length) { setCell(cellNode, "dp-cell dp-end", "", "#" + pos + ": not started"); continue; }
      var finished = frame.block > Math.floor(pos / blockSize) || noise.stop_rule;
      if (finished) {
        var text = pieceOf(canvas[pos]);
        if (!answer[pos]) { setCell(cellNode, "dp-cell dp-end", G.end, "#" + pos + ": " + JSON.stringify(text) +
                                    " · after the answer's end"); continue; }
        decidedTokens++;
        var now = Math.floor(pos / blockSize) === frame.block;
        setCell(cellNode, "dp-cell " + (now ? "dp-new" : "dp-done"), text, "#" + pos + ": " + JSON.stringify(text) +
                " · the canvas's text" + (now ? " (decided now)" : ""));
        continue;
      }
      var token = noise.noisy[pos - noise.start];
      var piece = pieceOf(token);
      var draft = JSON.stringify(pieceOf(noise.draft[pos - noise.start]));
      if (accepted[pos]) {
        var cls = "dp-cell dp-accepted";
        var old = undefined;
        if (changed[pos]) { cls += " dp-changed"; old = pieceOf(acceptedBefore[pos]); }
        else if (!(pos in acceptedBefore)) { cls += " dp-accepted-new"; }
        setCell(cellNode, cls, piece, "#" + pos + ": " + JSON.stringify(piece) + " · accepted" +
                (old !== undefined ? ", was " + JSON.stringify(old) : "") + " · draft " + draft, old);
      } else {
        setCell(cellNode, "dp-cell dp-noise", piece, "#" + pos + ": random token " + JSON.stringify(piece) +
                " (renoised, not accepted) · draft " + draft);
      }
    }
    for (var bb = 0; bb < blocks.length; bb++) {
      blocks[bb].className = frame && bb === frame.block ? "dp-block dp-active" : "dp-block";
      blocks[bb].style.display = !frame || bb > frame.block ? "none" : "";   // a canvas not started: not drawn
    }
    var nfe = frame ? frame.nfe : 0;
    readout.textContent = "Step " + step + "/" + frames.length + (frame ? " · canvas " + (frame.block + 1) + "/" +
      numBlocks + " · step " + (frame.round + 1) + " · accepted " + noise.accepted.length + "/" +
      noise.draft.length + " · renoised " + (noise.draft.length - noise.accepted.length) + " · changed " +
      noise.changed.length + " · mean entropy " + noise.mean_entropy.toFixed(3) + " nats" +
      (noise.stop_rule ? " · " + (STOP_WORDS[noise.stop_rule] || noise.stop_rule) : "") :
      " · before the first forward") + " · " + (labels.nfe || "NFE") + " " + nfe + " · " +
      (labels.new_tokens || "answer tokens") + " " + decidedTokens;
    scrubber.value = String(step);
  }

  function render(step) {
    if (noiseTrace) { renderNoise(step); return; }
    var frame = step > 0 ? frames[step - 1] : null;
    var canvas = frame ? frame.canvas : [];
    // Last commit per position up to this frame: [round, nfe, confidence]; and the NFE at which
    // a schema scaffold placed a position (not a decision of the model; older traces have none).
    var decided = new Array(genLength);
    var placed = {};
    // The last rewrite of each position up to this frame (Frame.edits: [position, old, new]), and
    // the last token decided there, which a remasked cell names.
    var edited = {};
    var lastToken = {};
    var editsShown = 0;
    for (var i = 0; i < step; i++) {
      var f = frames[i];
      var rewrites = f.edits || [];
      for (var e = 0; e < rewrites.length; e++) { edited[rewrites[e][0]] = [rewrites[e][1], rewrites[e][2], f.nfe]; }
      for (var m = 0; m < f.committed.length; m++) { lastToken[f.committed[m][0]] = f.committed[m][1]; }
      for (var j = 0; j < f.committed.length; j++) {
        var c = f.committed[j];
        if (c[0] >= 0 && c[0] < genLength) { decided[c[0]] = [f.round, f.nfe, c[2]]; }
      }
      var pre = f.prefilled || [];
      for (var q = 0; q < pre.length; q++) {
        if (!Object.prototype.hasOwnProperty.call(placed, pre[q])) { placed[pre[q]] = f.nfe; }
      }
    }
    var prefilledShown = 0;
    var fresh = {};
    if (frame) { for (var k = 0; k < frame.committed.length; k++) { fresh[frame.committed[k][0]] = true; } }
    var answer = answerOf(canvas);
    for (var pos = 0; pos < genLength; pos++) {
      var cellNode = cells[pos];
      var token = pos < canvas.length ? canvas[pos] : null;
      if (cellNode.style.removeProperty) { cellNode.style.removeProperty("--dp-c"); }
      cellNode.removeAttribute("aria-label");
      cellNode.removeAttribute("tabindex");
      breaks[pos].hidden = true;
      if (token === null || token === maskId) {
        if (decided[pos]) {                 // decided once, now back to the mask (engine/remask.py)
          var was = JSON.stringify(pieceOf(lastToken[pos]));
          cellNode.className = "dp-cell dp-mask dp-remasked";
          cellNode.textContent = G.remask;
          cellNode.title = "#" + pos + ": remasked (was " + was + "), to be decoded again";
          cellNode.setAttribute("aria-label", "#" + pos + ": remasked, was " + was);
        } else {
          cellNode.className = "dp-cell dp-mask";
          cellNode.textContent = G.mask;
          cellNode.title = "#" + pos + ": undecided";
        }
        continue;
      }
      var text = pieceOf(token);
      if (!answer[pos]) {
        cellNode.className = "dp-cell dp-end";
        cellNode.textContent = G.end;
        cellNode.title = "#" + pos + ": " + JSON.stringify(text) + " \u00b7 after the answer's end";
        continue;
      }
      cellNode.textContent = visible(text);
      breaks[pos].hidden = text.indexOf("\n") < 0;
      var info = decided[pos];
      if (Object.prototype.hasOwnProperty.call(placed, pos)) {
        prefilledShown++;
        cellNode.className = "dp-cell dp-pre";
        cellNode.title = "#" + pos + ": " + JSON.stringify(text) + " \u00b7 pre-filled by the schema at NFE " +
          placed[pos];
      } else if (!info) {
        cellNode.className = "dp-cell dp-filled";
        cellNode.title = "#" + pos + ": " + JSON.stringify(text);
      } else {
        cellNode.className = "dp-cell " + (fresh[pos] ? "dp-new" : "dp-done");
        var conf = info[2] === null ? 1 : Math.min(Math.max(info[2], 0), 1);
        if (cellNode.style.setProperty) { cellNode.style.setProperty("--dp-c", String(conf)); }
        cellNode.title = "#" + pos + ": " + JSON.stringify(text) + " \u00b7 round " + (info[0] + 1) +
          " \u00b7 NFE " + info[1] + " \u00b7 confidence " + conf.toFixed(2) + (fresh[pos] ? " \u00b7 new this round" : "");
        var edit = edited[pos];
        if (edit && edit[1] === token) {
          // As visualizer/grid.py draws it: the old piece struck through, then the new one.
          var old = JSON.stringify(pieceOf(edit[0]));
          var struck = el("s", "dp-old");
          struck.setAttribute("aria-hidden", "true");
          struck.textContent = visible(pieceOf(edit[0]));
          cellNode.textContent = "";
          cellNode.appendChild(struck);
          cellNode.appendChild(document.createTextNode(visible(text)));
          cellNode.className += " dp-edited";
          cellNode.setAttribute("tabindex", "0");
          cellNode.setAttribute("aria-label", "#" + pos + ": " + JSON.stringify(text) + ", edited: " + old + " -> " +
            JSON.stringify(text));
          cellNode.title += " \u00b7 edited: " + old + " -> " + JSON.stringify(text) + " at NFE " + edit[2];
          editsShown++;
        }
      }
    }
    for (var bb = 0; bb < blocks.length; bb++) {
      blocks[bb].className = frame && bb === frame.block ? "dp-block dp-active" : "dp-block";
    }
    // Answer tokens so far are judged against this frame's canvas, as the app's readout does.
    var tokens = count(answer);
    var nfe = frame ? frame.nfe : 0;
    var perForward = nfe ? (tokens / nfe).toFixed(2) : "0.00";
    readout.textContent = "Step " + step + "/" + frames.length + (frame ? " \u00b7 round " + (frame.round + 1) +
      " \u00b7 block " + (frame.block + 1) + "/" + numBlocks : " \u00b7 before the first forward") + " \u00b7 " +
      (labels.nfe || "NFE") + " " + nfe + " \u00b7 " + (labels.new_tokens || "answer tokens") + " " + tokens +
      " \u00b7 " + (labels.tokens_per_forward || "tokens per forward") + " " + perForward + " \u00b7 " +
      (labels.seconds || "model time") + " " + (frame ? frame.elapsed_s || 0 : 0).toFixed(3) + " s" +
      (prefilledShown ? " \u00b7 pre-filled by the schema " + prefilledShown : "") +
      (editsShown ? " \u00b7 " + (labels.edits || "edits") + " shown " + editsShown : "");
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
    if (current >= frames.length) { stop(); return; }
    timer = setTimeout(function () { current++; render(current); tick(); }, delay());
  }
  playButton.addEventListener("click", function () {
    if (timer !== null) { stop(); return; }
    if (current >= frames.length) { current = 0; render(current); }
    playButton.textContent = "Pause";
    tick();
  });
  scrubber.addEventListener("input", function () {
    stop();
    current = Number(scrubber.value);
    render(current);
  });
  if (frames.length) {
    render(0);
  } else {
    readout.textContent = "This trace has no frames.";
    playButton.disabled = true;
    scrubber.disabled = true;
  }
})();
