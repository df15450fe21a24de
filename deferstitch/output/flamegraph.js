/* deferstitch flame graph: click a frame to zoom, Reset to go back, search by regex (the share
 * matched is shown), hover for a frame's name, samples and share. Works in the standalone SVG and
 * in the HTML page (which adds a search box, buttons and a tooltip). Loads nothing. */
(function () {
  "use strict";
  var svg = document.getElementById("flamegraph");
  if (!svg) { return; }
  var W = +svg.getAttribute("width");
  var frames = [];
  var details = document.getElementById("fg-details");
  var matched = document.getElementById("fg-matched");
  var tip = document.getElementById("fg-tip");
  var resetText = document.getElementById("fg-reset");
  var query = document.getElementById("fg-query");
  var CHAR = 7;      /* px per character at 12px Verdana, about */


  function place(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    r.setAttribute("x", x.toFixed(1));
    r.setAttribute("width", Math.max(w - 0.5, 0.1).toFixed(1));
    var fit = Math.floor((w - 6) / CHAR), name = g._name;
    t.textContent = fit < 3 ? "" : (name.length <= fit ? name : name.slice(0, fit - 2) + "..");
    t.setAttribute("x", (x + 3).toFixed(1));
  }

  /* Zoom to ``target`` (null: the whole graph): its subtree fills the width, its ancestors
   * stay as full-width bars, everything else hides. */
  function zoom(target) {
    var x0 = target ? target._x : 0, w0 = target ? target._w : W, d0 = target ? target._d : 0;
    var scale = W / w0, eps = 1e-3;
    frames.forEach(function (g) {
      var inside = g._d >= d0 && g._x >= x0 - eps && g._x + g._w <= x0 + w0 + eps;
      var above = g._d < d0 && g._x <= x0 + eps && g._x + g._w >= x0 + w0 - eps;
      if (inside) {
        g.classList.remove("hidden", "parent");
        place(g, (g._x - x0) * scale, g._w * scale);
      } else if (above) {
        g.classList.remove("hidden");
        g.classList.add("parent");
        place(g, 0, W);
      } else {
        g.classList.add("hidden");
      }
    });
    svg.setAttribute("data-zoomed", target ? target._name : "");
    if (resetText) { resetText.style.opacity = target ? "1" : "0"; }
  }

  /* Highlight the frames whose name matches ``term`` (a regex, else a substring) and say what
   * share of all samples they hold (overlapping frames counted once). */
  function search(term) {
    var re = null, ranges = [], sum = 0, end = -1;
    if (term) { try { re = new RegExp(term); } catch (e) { re = null; } }
    frames.forEach(function (g) {
      var hit = !!term && (re ? re.test(g._name) : g._name.indexOf(term) >= 0);
      if (hit) { g.classList.add("match"); ranges.push([g._x, g._x + g._w]); }
      else { g.classList.remove("match"); }
    });
    ranges.sort(function (a, b) { return a[0] - b[0]; });
    ranges.forEach(function (r) {
      if (r[1] <= end) { return; }
      sum += r[1] - Math.max(r[0], end);
      end = r[1];
    });
    var share = term ? (100 * sum / W) : null;
    if (matched) { matched.textContent = term ? "Matched: " + share.toFixed(1) + "%" : ""; }
    svg.setAttribute("data-matched", term ? share.toFixed(2) : "");
    return share;
  }

  function show(g, ev) {
    var text = g.getAttribute("aria-label");
    if (details) { details.textContent = text; }
    if (tip && ev) {
      tip.textContent = text;
      tip.style.display = "block";
      tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 320) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    }
  }

  /* The frames as drawn now (timeline.js draws them anew for a range of time). */
  function bind() {
    frames = Array.prototype.slice.call(svg.querySelectorAll("g.frame"));
    frames.forEach(function (g) {
      g._x = +g.getAttribute("data-x");
      g._w = +g.getAttribute("data-w");
      g._d = +g.getAttribute("data-d");
      g._name = g.getAttribute("data-name");
      g.addEventListener("click", function () { zoom(g._d === 0 ? null : g); });
      g.addEventListener("mousemove", function (ev) { show(g, ev); });
      g.addEventListener("mouseout", function () {
        if (details) { details.textContent = " "; }
        if (tip) { tip.style.display = "none"; }
      });
    });
  }
  bind();
  if (resetText) { resetText.addEventListener("click", function () { zoom(null); }); }
  var searchText = document.getElementById("fg-search");
  if (searchText) {
    searchText.addEventListener("click", function () {
      var term = window.prompt("Search for (regex):", "");
      if (term !== null) { search(term); }
    });
  }
  if (query) { query.addEventListener("input", function () { search(query.value); }); }
  var resetButton = document.getElementById("fg-reset-button");
  if (resetButton) { resetButton.addEventListener("click", function () { zoom(null); }); }
  var clear = document.getElementById("fg-clear");
  if (clear) {
    clear.addEventListener("click", function () { if (query) { query.value = ""; } search(""); });
  }
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") { zoom(null); }
  });
  zoom(null);
  window.deferstitchFlame = {
    zoom: zoom, search: search,
    refresh: function () { bind(); zoom(null); if (query && query.value) { search(query.value); } }
  };
}());
