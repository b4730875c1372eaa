"use strict";
// orsgen view: everything below runs from the file itself (no network, no other host).
(function () {
  var t0 = performance.now();
  var RUN = JSON.parse(document.getElementById("run-data").textContent);
  var R = RUN.records, F = RUN.facts || {}, ROW_H = 22, FOLD = 600;
  // Each record says whether it passed, by the threshold its run or trajectory line recorded.
  var threshold = [].concat(F.pass_threshold).join(" or ");
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(x) { return x === null || x === undefined ? "n/a" : (typeof x === "number" ? (+x.toFixed(3)).toString() : String(x)); }
  function passes(r) { return r.passed === true; }
  function groupKey(r) { return RUN.kind === "training" ? (r.step === null ? "?" : r.step) + "|" + r.task : String(r.task); }
  function groupLabel(r) {
    var task = r.task === null || r.task === undefined ? "spec" : r.task;
    return RUN.kind === "training" ? "step " + (r.step === null ? "?" : r.step) + " · task " + task : "task " + task;
  }

  // Groups (rows of the grid): tasks for an evaluation, (step, task) for training.
  var groups = [], byKey = {}, maxSamples = 0;
  R.forEach(function (r, i) {
    r.i = i;
    var k = groupKey(r), g = byKey[k];
    if (!g) { g = byKey[k] = { key: k, label: groupLabel(r), task: r.task, step: r.step, items: [] }; groups.push(g); }
    g.items.push(r);
  });
  function cmp(a, b) { return a === b ? 0 : (a === null || a === undefined) ? 1 : (b === null || b === undefined) ? -1 : a < b ? -1 : 1; }
  groups.sort(function (a, b) { return cmp(a.step, b.step) || cmp(a.task, b.task); });
  groups.forEach(function (g) {
    g.items.sort(function (a, b) { return a.sample - b.sample; });
    maxSamples = Math.max(maxSamples, g.items.length);
  });

  function colour(r) {
    if (r.verdict !== "scored") return "";
    if (passes(r)) return "#1f9d55";
    var x = typeof r.reward === "number" ? Math.max(0, Math.min(1, r.reward)) : 0;
    return "hsl(" + Math.round(10 + 90 * x) + ",70%," + Math.round(52 - 8 * x) + "%)";
  }

  // Summary: counts per verdict, coverage, pass@1 (mean over tasks of passing samples).
  function summary(list) {
    var c = { scored: 0, unfinished: 0, failed: 0 }, tasks = {};
    list.forEach(function (r) {
      c[r.verdict] = (c[r.verdict] || 0) + 1;
      var t = tasks[String(r.task)] || (tasks[String(r.task)] = [0, 0]);
      t[0] += passes(r) ? 1 : 0; t[1] += 1;
    });
    var keys = Object.keys(tasks), p = 0;
    keys.forEach(function (k) { p += tasks[k][0] / tasks[k][1]; });
    return { n: list.length, c: c, coverage: list.length ? c.scored / list.length : 0, pass1: keys.length ? p / keys.length : null, tasks: keys.length };
  }
  function summaryText(s) {
    return s.n + " rollouts over " + s.tasks + " tasks: " + s.c.scored + " scored, " + s.c.unfinished +
      " unfinished, " + s.c.failed + " failed · coverage " + fmt(s.coverage) + " · pass@1 " + fmt(s.pass1) +
      " (reward ≥ " + threshold + ")";
  }

  // Filters.
  var match = new Uint8Array(R.length), shownGroups = groups, texts = null;
  function searchText(r) {
    var parts = [r.reason || ""];
    (r.messages || []).forEach(function (m) {
      parts.push(contentText(m.content));
      (m.tool_calls || []).forEach(function (c) { var f = c.function || {}; parts.push(f.name || "", f.arguments || ""); });
    });
    return parts.join("\n").toLowerCase();
  }
  function contentText(c) {
    if (typeof c === "string") return c;
    if (Array.isArray(c)) return c.map(function (p) { return typeof p === "string" ? p : (p && p.text) || ""; }).join("\n");
    return c === null || c === undefined ? "" : JSON.stringify(c);
  }
  function taskSet(text) {
    text = text.trim();
    if (!text) return null;
    var set = {};
    text.split(",").forEach(function (part) {
      var m = part.trim().match(/^(\d+)\s*-\s*(\d+)$/);
      if (m) { for (var i = +m[1]; i <= +m[2]; i++) set[i] = 1; }
      else if (part.trim()) set[part.trim()] = 1;
    });
    return set;
  }
  function applyFilters() {
    var verdicts = {};
    ["scored", "unfinished", "failed"].forEach(function (v) { verdicts[v] = $("f-" + v).checked; });
    var tasks = taskSet($("f-task").value), q = $("f-text").value.trim().toLowerCase(), stop = $("f-stop").value;
    var lo = $("f-rmin").value === "" ? null : +$("f-rmin").value, hi = $("f-rmax").value === "" ? null : +$("f-rmax").value;
    if (q && texts === null) texts = R.map(searchText);
    var chosen = [];
    for (var i = 0; i < R.length; i++) {
      var r = R[i], ok = verdicts[r.verdict];
      if (ok && tasks) ok = !!tasks[String(r.task)];
      if (ok && stop) ok = r.stop === stop;
      if (ok && (lo !== null || hi !== null)) ok = typeof r.reward === "number" && (lo === null || r.reward >= lo) && (hi === null || r.reward <= hi);
      if (ok && q) ok = texts[i].indexOf(q) >= 0;
      match[i] = ok ? 1 : 0;
      if (ok) chosen.push(r);
    }
    shownGroups = groups.filter(function (g) { return g.items.some(function (r) { return match[r.i]; }); });
    $("shown").textContent = chosen.length === R.length ? "showing all " + R.length : "showing " + chosen.length + " of " + R.length + ": " + summaryText(summary(chosen));
    $("grid").style.height = shownGroups.length * ROW_H + "px";
    $("gridwrap").scrollTop = Math.min($("gridwrap").scrollTop, shownGroups.length * ROW_H);
    drawn = null; draw();
  }

  // The grid, drawn lazily: only the rows in view (plus a margin) exist in the page.
  var drawn = null, selected = -1;
  function draw() {
    var wrap = $("gridwrap"), top = wrap.scrollTop, h = wrap.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW_H) - 20), last = Math.min(shownGroups.length, Math.ceil((top + h) / ROW_H) + 20);
    if (drawn && drawn[0] === first && drawn[1] === last) return;
    drawn = [first, last];
    var grid = $("grid"), frag = document.createDocumentFragment();
    for (var n = first; n < last; n++) {
      var g = shownGroups[n], row = el("div", "row");
      row.style.top = n * ROW_H + "px";
      row.appendChild(el("span", "label", g.label)).title = g.label;
      g.items.forEach(function (r) {
        var c = el("span", "cell " + r.verdict + (match[r.i] ? "" : " dim") + (r.i === selected ? " sel" : ""));
        var bg = colour(r);
        if (bg) c.style.background = bg;
        c.dataset.i = r.i;
        c.title = groupLabel(r) + " · sample " + r.sample + " · " + r.verdict + " · reward " + fmt(r.reward) + (r.stop ? " · stop " + r.stop : "");
        row.appendChild(c);
      });
      frag.appendChild(row);
    }
    grid.replaceChildren(frag);
  }

  // One rollout.
  function contentNode(c) {
    var box = el("div");
    var parts = Array.isArray(c) ? c : [c];
    parts.forEach(function (p) {
      if (p === null || p === undefined) return;
      var url = null;
      if (p && typeof p === "object") {
        if (p.image_url) url = typeof p.image_url === "string" ? p.image_url : p.image_url.url;
        else if (p.type === "image" && typeof p.data === "string") url = "data:" + (p.mimeType || "image/png") + ";base64," + p.data;
      }
      if (url !== null) {
        if (/^data:image\//.test(url)) {
          var img = el("img", "thumb"); img.src = url; img.alt = "image";
          img.addEventListener("click", function () { img.classList.toggle("big"); });
          box.appendChild(img);
        } else box.appendChild(el("span", "chip", "(image not stored)"));
        return;
      }
      if (p === "(image)") { box.appendChild(el("span", "chip", "(image, not stored)")); return; }
      var text = typeof p === "string" ? p : (p.text !== undefined ? p.text : JSON.stringify(p));
      box.appendChild(folded(text));
    });
    return box;
  }
  function folded(text) {
    text = String(text);
    if (text.length <= FOLD && text.split("\n").length <= 15) return el("pre", null, text);
    var d = el("details", "fold"), s = el("summary", null, text.slice(0, 120).replace(/\s+/g, " ") + "… (" + text.length + " characters)");
    d.appendChild(s);
    d.addEventListener("toggle", function () { if (d.open && d.childNodes.length === 1) d.appendChild(el("pre", null, text)); });
    return d;
  }
  function pretty(args) {
    try { return JSON.stringify(typeof args === "string" ? JSON.parse(args) : args, null, 2); } catch (e) { return String(args); }
  }
  function show(i) {
    var r = R[i], box = $("rollout");
    selected = i; drawn = null; draw();
    box.replaceChildren();
    var meta = el("div", "meta");
    function line(k, v, cls) { var d = el("div", cls); d.appendChild(el("b", null, k)); d.appendChild(document.createTextNode(" " + v)); meta.appendChild(d); }
    line("rollout", groupLabel(r) + " · sample " + r.sample + (r.split ? " · split " + r.split : "") + (r.file ? " · " + r.file : ""));
    line("verdict", r.verdict, "verdict");
    line("reward", fmt(r.reward), "reward");
    if (r.reason) line("reason", r.reason, "reason");
    if (r.stop) line("stop", r.stop, "stop");
    var u = r.usage || {};
    if ("prompt_tokens" in u) line("tokens", u.prompt_tokens === null ? "n/a (an answer reported no usage)" : u.prompt_tokens + " prompt · " + u.completion_tokens + " completion", "tokens");
    var t = [];
    Object.keys(r.timings || {}).forEach(function (k) { t.push(k + " " + fmt(r.timings[k]) + " s"); });
    Object.keys(r.counts || {}).forEach(function (k) { t.push(k + " " + r.counts[k]); });
    if (t.length) line("timings", t.join(" · "), "timings");
    box.appendChild(meta);
    var msgs = r.messages || [];
    if (!msgs.length) box.appendChild(el("p", "empty", "No messages were recorded for this rollout."));
    msgs.forEach(function (m) {
      var role = m.role || "?", d = el("div", "msg " + role);
      var head = role === "tool" ? "tool result" + (m.name ? " · " + m.name : "") : role === "user" ? "prompt" : role;
      d.appendChild(el("div", "role", head));
      if (contentText(m.content) !== "" || Array.isArray(m.content)) d.appendChild(contentNode(m.content));
      (m.tool_calls || []).forEach(function (c) {
        var f = c.function || {}, call = el("div", "call");
        call.appendChild(el("b", null, "tool call " + (f.name || "?")));
        call.appendChild(el("pre", "args", pretty(f.arguments)));
        d.appendChild(call);
      });
      var extra = [];
      if (m.reward !== undefined) extra.push("reward " + fmt(m.reward));
      if (m.finished) extra.push("finished");
      if (m.seconds !== undefined) extra.push(fmt(m.seconds) + " s");
      if (extra.length) d.appendChild(el("div", "chip", extra.join(" · ")));
      if (m.error) d.appendChild(el("div", "err", "error: " + m.error));
      box.appendChild(d);
    });
    box.scrollTop = 0;
  }

  // Per tool (the run's facts: an evaluation's rows or the training lines' calls): calls,
  // failed (by the environment, by the model), mean and p90 seconds. Folded by default.
  function secs(x) { return x === null || x === undefined ? "n/a" : (+x.toPrecision(4)).toString(); }
  function toolTable(tools) {
    var names = Object.keys(tools || {}), box = $("tools"), table = box.querySelector("table");
    if (!names.length) return;
    box.querySelector("summary").textContent = "per tool: " + names.length + (names.length === 1 ? " tool" : " tools");
    var head = el("tr");
    ["tool", "calls", "failed", "by the environment", "by the model", "mean s", "p90 s"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(head);
    names.forEach(function (name) {
      var t = tools[name], row = el("tr");
      [name, t.calls, t.failed, t.environment_failed, t.model_failed, secs(t.mean_s), secs(t.p90_s)].forEach(function (v) { row.appendChild(el("td", null, v)); });
      table.appendChild(row);
    });
    box.hidden = false;
  }

  // Wiring.
  $("title").textContent = RUN.title;
  document.title = "orsgen view: " + RUN.title;
  var facts = [];
  ["model", "environment", "split", "endpoint", "n", "adapter", "adapter_version", "pass_threshold", "files"].forEach(function (k) {
    if (F[k] !== undefined && F[k] !== null) facts.push(k + " " + (Array.isArray(F[k]) ? F[k].join(", ") : F[k]));
  });
  $("facts").textContent = facts.join(" · ");
  $("summary").textContent = summaryText(summary(R));
  toolTable(F.tools);
  // The stop filter offers the reasons the rollouts have (none: an older run, or training).
  var stops = {};
  R.forEach(function (r) { if (r.stop) stops[r.stop] = (stops[r.stop] || 0) + 1; });
  Object.keys(stops).sort().forEach(function (s) { var o = el("option", null, s + " (" + stops[s] + ")"); o.value = s; $("f-stop").appendChild(o); });
  $("f-stops").hidden = !Object.keys(stops).length;
  $("f-stop").addEventListener("change", applyFilters);
  var head = $("gridhead");
  head.appendChild(el("span", "label", RUN.kind === "training" ? "step · task" : "task"));
  head.appendChild(el("span", null, "samples 0–" + Math.max(0, maxSamples - 1)));
  var timer = null;
  function later() { clearTimeout(timer); timer = setTimeout(applyFilters, 120); }
  ["f-scored", "f-unfinished", "f-failed"].forEach(function (id) { $(id).addEventListener("change", applyFilters); });
  ["f-task", "f-text", "f-rmin", "f-rmax"].forEach(function (id) { $(id).addEventListener("input", later); });
  $("gridwrap").addEventListener("scroll", draw);
  window.addEventListener("resize", function () { drawn = null; draw(); });
  $("grid").addEventListener("click", function (e) { var i = e.target.dataset && e.target.dataset.i; if (i !== undefined) show(+i); });
  $("gridwrap").style.width = Math.min(120 + 20 * maxSamples + 30, 2000) + "px";
  applyFilters();
  // ready: milliseconds from the start of navigation (file read and parsed); script: this script alone.
  window.orsgenViewer = { ready: performance.now(), script: performance.now() - t0, rollouts: R.length, show: show, apply: applyFilters };
  document.body.dataset.ready = "1";
})();
