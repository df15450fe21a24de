/* deferstitch flame graph page: the samples over time (slices of the recording; one row per
 * thread name when "per thread" is ticked). Drag across it to choose a range: the graph is drawn
 * anew from the samples of that range only, exactly as `--time A,B` chooses them (a range is
 * whole slices: A the first ns of its first slice, B the last of its last), and the page's
 * address says it (#time=A,B, seconds as perf prints them) so that a link reopens it. A range
 * typed into the address is narrowed to the whole slices inside it. Loads nothing. */
(function () {
  "use strict";
  var box = document.getElementById("fg-data");
  var strip = document.getElementById("fg-timeline");
  var svg = document.getElementById("flamegraph");
  if (!box || !strip || !svg) { return; }
  var D = JSON.parse(box.textContent);
  var NS = svg.namespaceURI;     /* SVG's, from the page: the file names no address */
  var W = +svg.getAttribute("width"), H = +svg.getAttribute("height");
  var inverted = svg.getAttribute("data-inverted") === "1";
  var TOP = 60, BOTTOM = 34, FH = 16, MIN_PX = 0.1, SH = +strip.getAttribute("height");
  var slices = D.slices;
  D.cells.forEach(function (c) {
    for (var k = 0; k < c.length; k += 3) { if (c[k] + 1 > slices) { slices = c[k] + 1; } }
  });
  var range = null;           /* [first slice, last slice] or null: the whole recording */
  var anchor = null;

  function pad9(n) { var s = String(n); while (s.length < 9) { s = "0" + s; } return s; }
  function seconds(ns) { return Math.floor(ns / 1e9) + "." + pad9(ns % 1e9); }
  function parseSeconds(text) {
    var m = /^(\d*)(?:\.(\d{0,9}))?$/.exec(text);
    if (!m || (!m[1] && m[2] === undefined)) { return null; }
    return (+(m[1] || "0")) * 1e9 + +((m[2] || "") + "000000000").slice(0, 9);
  }
  function first(i) { return D.t0 + i * D.width; }
  function last(j) { return D.t0 + (j + 1) * D.width - 1; }

  function amount(v) {
    if (D.unit !== "ns") { return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ",") + " " + D.unit; }
    var u = [[1e9, "s"], [1e6, "ms"], [1e3, "us"]];
    for (var i = 0; i < u.length; i++) { if (v >= u[i][0]) { return (v / u[i][0]).toFixed(2) + " " + u[i][1]; } }
    return v + " ns";
  }

  /* weight (and samples stitched after their stack) of each stack in the range */
  function weights(r) {
    return D.cells.map(function (c) {
      var w = 0, after = 0;
      for (var k = 0; k < c.length; k += 3) {
        if (c[k] < 0 || !r || (c[k] >= r[0] && c[k] <= r[1])) { w += c[k + 1]; after += c[k + 2]; }
      }
      return [w, after];
    });
  }

  /* the tree of the stacks in the range, then its frames as flamegraph.py's svg() draws them */
  function draw(r) {
    var root = { name: "all", kind: "root", colour: null, value: 0, after: 0, children: {} };
    weights(r).forEach(function (wa, s) {
      if (!wa[0] && !wa[1]) { return; }
      var node = root;
      node.value += wa[0]; node.after += wa[1];
      D.stacks[s].forEach(function (f) {
        var key = D.frames[f][0] + "\u0000" + D.frames[f][1];
        var child = node.children[key];
        if (!child) {
          child = node.children[key] = { name: D.frames[f][0], kind: D.frames[f][1],
                                         colour: D.frames[f][2], value: 0, after: 0, children: {} };
        }
        child.value += wa[0]; child.after += wa[1];
        node = child;
      });
    });
    var total = root.value || 1, scale = W / total, out = [], todo = [[root, 0, 0]];
    while (todo.length) {
      var t = todo.pop(), node = t[0], x = t[1], d = t[2];
      out.push(frame(node, x, node.value * scale, d, total));
      var kids = Object.keys(node.children).map(function (k) { return node.children[k]; });
      kids.sort(function (a, b) {
        return a.name < b.name ? -1 : a.name > b.name ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0;
      });
      var cx = x;
      kids.forEach(function (c) {
        var w = c.value * scale;
        if (w >= MIN_PX) { todo.push([c, cx, d + 1]); }
        cx += w;
      });
    }
    var g = document.getElementById("frames");
    while (g.firstChild) { g.removeChild(g.firstChild); }
    out.forEach(function (el) { g.appendChild(el); });
    svg.setAttribute("data-total", root.value);
    if (window.deferstitchFlame) { window.deferstitchFlame.refresh(); }
  }

  function frame(node, x, w, d, total) {
    var y = inverted ? TOP + d * FH : H - BOTTOM - (d + 1) * FH;
    var label = node.name + " (" + amount(node.value) + ", " + (100 * node.value / total).toFixed(2) + "%" +
        (node.after ? ", " + node.after + " stitched after their stack" : "") + ")";
    var g = document.createElementNS(NS, "g");
    g.setAttribute("class", "frame " + node.kind);
    [["data-name", node.name], ["data-kind", node.kind], ["data-value", node.value],
     ["data-after", node.after], ["data-x", x.toFixed(3)], ["data-w", w.toFixed(3)], ["data-d", d],
     ["aria-label", label]].forEach(function (a) { g.setAttribute(a[0], a[1]); });
    var title = document.createElementNS(NS, "title");
    title.textContent = label;
    var rect = document.createElementNS(NS, "rect");
    [["x", x.toFixed(1)], ["y", y], ["width", Math.max(w - 0.5, 0.1).toFixed(1)], ["height", FH - 1],
     ["rx", 2], ["fill", node.colour || "rgb(200,200,180)"]].forEach(function (a) { rect.setAttribute(a[0], a[1]); });
    var text = document.createElementNS(NS, "text");
    text.setAttribute("x", (x + 3).toFixed(1));
    text.setAttribute("y", y + FH - 4);
    g.appendChild(title); g.appendChild(rect); g.appendChild(text);
    return g;
  }

  /* the strip: one row (or one per thread name, the stacks' first frame), a bar per slice */
  function strip_() {
    while (strip.firstChild) { strip.removeChild(strip.firstChild); }
    var perThread = document.getElementById("fg-per-thread");
    var rows = {}, order = [];
    D.cells.forEach(function (c, s) {
      var name = perThread && perThread.checked ? D.frames[D.stacks[s][0]][0] : "all";
      if (!rows[name]) { rows[name] = new Array(slices).fill(0); rows[name].total = 0; order.push(name); }
      for (var k = 0; k < c.length; k += 3) {
        if (c[k] >= 0) { rows[name][c[k]] += c[k + 1]; rows[name].total += c[k + 1]; }
      }
    });
    order.sort(function (a, b) { return rows[b].total - rows[a].total; });
    order = order.slice(0, 12);
    var rh = Math.max(12, Math.floor(48 / Math.max(order.length, 1)));
    strip.setAttribute("height", Math.max(SH, rh * order.length + 16));
    var bw = W / slices;
    order.forEach(function (name, row) {
      var vals = rows[name], max = Math.max.apply(null, vals) || 1, y0 = row * rh;
      vals.forEach(function (v, i) {
        if (!v) { return; }
        var h = Math.max(1, (rh - 2) * v / max), b = document.createElementNS(NS, "rect");
        b.setAttribute("x", (i * bw).toFixed(2)); b.setAttribute("width", Math.max(bw - 0.2, 0.5).toFixed(2));
        b.setAttribute("y", (y0 + rh - h).toFixed(1)); b.setAttribute("height", h.toFixed(1));
        b.setAttribute("fill", "rgb(220,110,50)"); b.setAttribute("data-slice", i);
        strip.appendChild(b);
      });
      if (order.length > 1) {
        var label = document.createElementNS(NS, "text");
        label.setAttribute("x", 2); label.setAttribute("y", y0 + 10); label.textContent = name;
        label.setAttribute("font-size", "10");
        strip.appendChild(label);
      }
    });
    var sel = document.createElementNS(NS, "rect");
    sel.setAttribute("id", "fg-range-box"); sel.setAttribute("fill", "rgba(60,90,200,0.25)");
    sel.setAttribute("y", 0); sel.setAttribute("height", strip.getAttribute("height"));
    strip.appendChild(sel);
    mark();
  }

  function mark() {
    var sel = document.getElementById("fg-range-box"), bw = W / slices;
    if (sel) {
      sel.setAttribute("x", range ? (range[0] * bw).toFixed(2) : 0);
      sel.setAttribute("width", range ? ((range[1] - range[0] + 1) * bw).toFixed(2) : 0);
    }
    var said = document.getElementById("fg-range");
    if (said) {
      said.textContent = range ? "--time " + seconds(first(range[0])) + "," + seconds(last(range[1]))
        : "whole recording: " + seconds(D.t0) + " to " + seconds(last(slices - 1));
    }
  }

  function choose(r, fromAddress) {
    range = r;
    draw(r);
    mark();
    if (!fromAddress) {
      var hash = r ? "#time=" + seconds(first(r[0])) + "," + seconds(last(r[1])) : "";
      if (window.history && window.history.replaceState) {
        window.history.replaceState(null, "", window.location.pathname + window.location.search + hash);
      } else { window.location.hash = hash; }
    }
  }

  /* #time=A,B (either end open) -> the whole slices inside it */
  function fromAddress() {
    var m = /(?:^#|&)time=([^&]*)/.exec(window.location.hash);
    if (!m) { return null; }
    var parts = decodeURIComponent(m[1]).split(",");
    if (parts.length !== 2) { return null; }
    var a = parts[0] ? parseSeconds(parts[0]) : D.t0, b = parts[1] ? parseSeconds(parts[1]) : last(slices - 1);
    if (a === null || b === null) { return null; }
    var i = Math.max(0, Math.ceil((a - D.t0) / D.width)), j = Math.min(slices - 1, Math.floor((b - D.t0 + 1) / D.width) - 1);
    return j >= i ? [i, j] : [i, i - 1];
  }

  function sliceAt(ev) {
    var box = strip.getBoundingClientRect();
    return Math.max(0, Math.min(slices - 1, Math.floor((ev.clientX - box.left) / (box.width / slices))));
  }
  strip.addEventListener("mousedown", function (ev) { anchor = sliceAt(ev); ev.preventDefault(); });
  strip.addEventListener("mousemove", function (ev) {
    if (anchor === null) { return; }
    var i = sliceAt(ev);
    range = [Math.min(anchor, i), Math.max(anchor, i)];
    mark();
  });
  window.addEventListener("mouseup", function (ev) {
    if (anchor === null) { return; }
    var i = sliceAt(ev);
    var r = [Math.min(anchor, i), Math.max(anchor, i)];
    anchor = null;
    choose(r, false);
  });
  var reset = document.getElementById("fg-range-reset");
  if (reset) { reset.addEventListener("click", function () { choose(null, false); }); }
  var per = document.getElementById("fg-per-thread");
  if (per) { per.addEventListener("change", strip_); }
  window.addEventListener("hashchange", function () { choose(fromAddress(), true); });
  strip_();
  var start = fromAddress();
  if (start) { choose(start, true); }
  window.deferstitchTimeline = { choose: choose, range: function () { return range; } };
}());
