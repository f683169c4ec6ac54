"""The HTML report's one stylesheet and one script, inlined in the page (no file, font or network).

The page's Content-Security-Policy allows exactly these two blocks (by SHA-256) and nothing else.
The script is optional (every chart has a table beside it): it sorts ``sortable`` tables, draws
embedded telemetry traces on demand (``textContent`` only: data never become markup) and opens
every ``<details>`` for printing. Verdict colours come from :mod:`reports.words.palette`.
"""

from __future__ import annotations

import base64
import hashlib

from reports.words.palette import css_rules

CSS = (
    """
:root { --fg:#1f2328; --line:#d0d7de; --bg:#ffffff; --soft:#f6f8fa; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--fg); background: var(--bg); line-height: 1.5;
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
main { max-width: 80rem; margin: 0 auto; padding: 1rem 1rem 4rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: .5rem 0 .25rem; overflow-wrap: anywhere; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; padding-bottom: .2rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p, li { overflow-wrap: anywhere; }
code, .hash, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .86em; }
.hash { overflow-wrap: anywhere; word-break: break-all; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--soft); padding: .6rem; border-radius: 6px; }
.study { color: var(--muted); margin: 0 0 .8rem; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem .8rem; margin: .5rem 0; }
.facts dt { font-weight: 600; } .facts dd { margin: 0; overflow-wrap: anywhere; }
nav.toc ol { display: flex; flex-wrap: wrap; gap: .2rem 1rem; padding: 0; margin: .6rem 0; list-style: none; font-size: .92rem; }
a { color: #0550ae; }
a:focus-visible, summary:focus-visible, button:focus-visible, [tabindex]:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.decision { font-size: 1.15rem; padding: .8rem 1rem; border-left: 6px solid var(--muted); background: var(--soft); border-radius: 4px; }
.word { font-weight: 700; letter-spacing: .02em; }
.badge { display: inline-block; font-weight: 700; font-size: .85rem; padding: 0 .45rem; border-radius: 1rem;
  border: 2px solid currentColor; white-space: nowrap; }
.alarm { border: 2px solid var(--fail); background: #fff1f0; padding: .5rem .8rem; border-radius: 6px; }
.notice { border: 1px solid var(--line); background: var(--soft); padding: .5rem .8rem; border-radius: 6px; }
.alarm::before { content: "NOTICE: "; font-weight: 700; }
.diagnostics { border: 2px dashed var(--muted); background: #fafafa; padding: .2rem 1rem 1rem; border-radius: 8px; margin-top: 2rem; }
.diagnostics h2 { border: 0; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td code, td.nowrap { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; color: inherit; text-align: inherit; }
th button::after { content: " \\2195"; color: var(--muted); }
th[aria-sort="ascending"] button::after { content: " \\2191"; } th[aria-sort="descending"] button::after { content: " \\2193"; }
.bad { color: var(--fail); font-weight: 700; }
details { border: 1px solid var(--line); border-radius: 6px; padding: .3rem .8rem; margin: .6rem 0; }
summary { cursor: pointer; font-weight: 600; padding: .2rem 0; }
details[open] > summary { margin-bottom: .4rem; }
figure { margin: 1rem 0; } figcaption { color: var(--muted); font-size: .9rem; margin: .2rem 0 .6rem; }
.panel { margin: .2rem 0 1.2rem; }
.panel-title { margin: 0; font-size: .95rem; }
.panel-title .gid { font-weight: 700; }
svg.figure { display: block; overflow: visible; }
.legend { display: flex; flex-wrap: wrap; gap: .2rem 1.1rem; padding: 0; list-style: none; font-size: .88rem; color: var(--muted); }
.legend svg { vertical-align: middle; margin-right: .3rem; }
.muted { color: var(--muted); }
.rank { display: inline-block; font-weight: 700; font-size: .85rem; padding: 0 .45rem; border-radius: 1rem;
  border: 2px solid currentColor; white-space: nowrap; }
tr.abstain td { background: var(--soft); }
ul.tight { margin: 0; padding-left: 1rem; }
button.draw { font: inherit; padding: .3rem .8rem; border: 1px solid var(--muted); border-radius: 6px; background: var(--soft); cursor: pointer; }
.trace-figure { min-height: 1rem; }
"""
    + css_rules()
    + """@media (max-width: 640px) {
  main { padding: .6rem .6rem 3rem; }
  h1 { font-size: 1.3rem; }
  .facts { grid-template-columns: 1fr; } .facts dd { margin-bottom: .3rem; }
  table.stack thead { position: absolute; left: -9999px; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; width: 100%; }
  table.stack tr { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0; padding: .2rem .4rem; }
  table.stack td { border: 0; padding: .15rem 0; text-align: left; white-space: normal; }
  table.stack caption { display: block; }
  table.stack td code { white-space: normal; }
  table.stack td::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
}
@media print {
  body { font-size: 11pt; } main { max-width: none; padding: 0; }
  nav.toc, button.draw { display: none; }
  details { border: 0; padding: 0; } summary { list-style: none; }
  h2 { break-after: avoid; } tr, figure, .panel, svg { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
"""
)

JS = r"""
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  function sortKey(cell) {
    var raw = cell.getAttribute("data-sort");
    var text = raw !== null ? raw : cell.textContent.trim();
    var num = Number(text);
    return text !== "" && isFinite(num) ? [0, num] : [1, text.toLowerCase()];
  }
  function compare(a, b) {
    if (a[0] !== b[0]) { return a[0] - b[0]; }
    return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var c = compare(sortKey(r1.cells[col]), sortKey(r2.cells[col]));
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var opened = [];
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details:not([open])").forEach(function (d) { d.open = true; opened.push(d); });
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
  });
  function el(name, attrs, text) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function decode(b64) {
    var bin = atob(b64);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  function ticks(lo, hi, n) {
    var raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), step = 10 * mag;
    [1, 2, 2.5, 5, 10].some(function (m) { if (raw <= m * mag) { step = m * mag; return true; } return false; });
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) { out.push(+v.toPrecision(12)); }
    return out;
  }
  function draw(host, d) {
    var W = Math.max(host.clientWidth, 280), H = 300, L = 56, R = 10, T = 12, B = 44;
    var x0 = d.x[0], x1 = d.x[1], y0 = d.y[0], y1 = d.y[1];
    if (x1 <= x0) { x1 = x0 + 1; } if (y1 <= y0) { y1 = y0 + 1; }
    var sx = function (v) { return L + (v - x0) / (x1 - x0) * (W - L - R); };
    var sy = function (v) { return T + (1 - (v - y0) / (y1 - y0)) * (H - T - B); };
    var svg = el("svg", {width: W, height: H, role: "img", "aria-label": d.label, "font-size": 11,
      "font-family": "system-ui, sans-serif"});
    svg.appendChild(el("title", {}, d.label));
    d.phases.forEach(function (p) {
      var a = sx(p[1]), b = sx(p[2]);
      svg.appendChild(el("rect", {x: a, width: Math.max(b - a, 0.5), y: T + p[3] * 8, height: H - T - B - p[3] * 8,
        fill: p[4], "fill-opacity": 0.28}));
    });
    for (var k = 0; k < d.phase_labels.length; k++) {
      var q = d.phase_labels[k];
      svg.appendChild(el("text", {x: sx(q[1]), y: T + 12, "text-anchor": "middle", fill: "#333"}, q[0]));
    }
    var pts = [];
    var last = null;
    for (var i = 0; i < d.px.length; i++) {
      if (d.px[i] === null || d.py[i] === null) { continue; }
      if (last !== null) { pts.push(sx(d.px[i]).toFixed(1) + "," + sy(last).toFixed(1)); }
      pts.push(sx(d.px[i]).toFixed(1) + "," + sy(d.py[i]).toFixed(1));
      last = d.py[i];
    }
    svg.appendChild(el("polyline", {points: pts.join(" "), fill: "none", stroke: "#555", "stroke-opacity": 0.6,
      "stroke-width": 1, "class": "polls"}));
    var g = el("g", {"class": "updates"});
    for (var j = 0; j < d.ux.length; j++) {
      var y = sy(d.uy[j]);
      g.appendChild(el("line", {x1: sx(d.ulo[j]), x2: sx(d.uhi[j]), y1: y, y2: y, stroke: "#08306b", "stroke-width": 1.4}));
      g.appendChild(el("circle", {cx: sx(d.ux[j]), cy: y, r: 2.6, fill: "#fff", stroke: "#08306b"}));
    }
    svg.appendChild(g);
    svg.appendChild(el("line", {x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#444"}));
    svg.appendChild(el("line", {x1: L, x2: L, y1: T, y2: H - B, stroke: "#444"}));
    ticks(x0, x1, Math.max(3, Math.floor(W / 90))).forEach(function (t) {
      svg.appendChild(el("line", {x1: sx(t), x2: sx(t), y1: H - B, y2: H - B + 4, stroke: "#444"}));
      svg.appendChild(el("text", {x: sx(t), y: H - B + 16, "text-anchor": "middle"}, String(t)));
    });
    ticks(y0, y1, 4).forEach(function (t) {
      svg.appendChild(el("line", {x1: L - 4, x2: L, y1: sy(t), y2: sy(t), stroke: "#444"}));
      svg.appendChild(el("text", {x: L - 6, y: sy(t) + 4, "text-anchor": "end"}, String(t)));
    });
    svg.appendChild(el("text", {x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle"}, d.xlabel));
    svg.appendChild(el("text", {x: 12, y: T + (H - T - B) / 2, "text-anchor": "middle",
      transform: "rotate(-90 12 " + (T + (H - T - B) / 2) + ")"}, d.ylabel));
    host.textContent = "";
    host.appendChild(svg);
  }
  document.querySelectorAll("button.draw").forEach(function (button) {
    button.addEventListener("click", function () {
      var host = document.getElementById(button.getAttribute("data-target"));
      var data = document.getElementById(button.getAttribute("data-source"));
      var status = document.getElementById(button.getAttribute("data-status"));
      if (typeof DecompressionStream === "undefined") {
        status.textContent = "This browser cannot decompress the embedded trace (no DecompressionStream); the text above gives its numbers.";
        return;
      }
      button.disabled = true;
      status.textContent = "Decompressing the embedded trace\u2026";
      decode(data.textContent.trim()).then(function (d) {
        draw(host, d);
        status.textContent = "Drawn: " + d.px.length + " poll points and " + d.ux.length + " updates.";
        button.textContent = "Trace drawn";
      }).catch(function (err) {
        status.textContent = "The embedded trace could not be drawn: " + err;
        button.disabled = false;
      });
    });
  });
})();
"""


def csp_hash(text: str) -> str:
    """The CSP source expression allowing exactly this inline block: ``'sha256-<base64>'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy() -> str:
    """Nothing may load or connect; only this page's own style and script blocks run."""
    return (
        f"default-src 'none'; style-src {csp_hash(CSS)}; script-src {csp_hash(JS)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
