/* trawl live dashboard: polls the read API every 2 s and draws with uPlot (vendored beside
   this file). Text from the crawl (URLs, error kinds, site names) comes from the web, so the
   DOM is built with textContent only, never innerHTML.

   Every chart container carries data-points (rows shown) and data-max (largest value shown),
   so a test or a curious operator can tell a chart that shows data from an empty one. */
"use strict";

const POLL_MS = 2000;
const SITES_EVERY = 2; // polls: the site tables rank every known site, so every 4 s is enough
const KEEP_S = 3600;
const CHART_HEIGHT = 200;
const MIN_SPAN_S = 60;
const STATUS_CLASSES = ["2xx", "3xx", "4xx", "5xx", "error", "other"];
const COLOR = {
  fetched: "#4cc9f0",
  stored: "#80ed99",
  "2xx": "#52b788",
  "3xx": "#4895ef",
  "4xx": "#f4a261",
  "5xx": "#ef476f",
  error: "#b5179e",
  other: "#8d99ae",
  fast: "#4cc9f0",
  slow: "#ffd166",
  refresh: "#c77dff",
  discovery: "#4cc9f0",
  skip: "#ffd166",
};

const state = { rows: [], lastAt: 0, windowS: 900, polls: 0, charts: {} };

const $ = (id) => document.getElementById(id);

async function getJSON(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// ---- formatting --------------------------------------------------------------------------
const intFormat = new Intl.NumberFormat("en-US");
const fmtInt = (n) => (n == null ? "–" : intFormat.format(Math.round(n)));
const fmtRate = (v) => (v == null ? "–" : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

function fmtBytes(n) {
  if (n == null) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return `${n >= 100 || i === 0 ? n.toFixed(0) : n.toFixed(1)} ${units[i]}`;
}

function fmtAgo(at) {
  const s = Math.max(0, Date.now() / 1000 - at);
  if (s < 60) return `${s.toFixed(0)} s ago`;
  if (s < 3600) return `${(s / 60).toFixed(0)} min ago`;
  return `${(s / 3600).toFixed(1)} h ago`;
}

const fmtTick = (v) => intFormat.format(Number(v.toFixed(2)));
const fmtClock = (at) => new Date(at * 1000).toLocaleTimeString([], { hour12: false });

// ---- charts ------------------------------------------------------------------------------
const axis = {
  stroke: "#8793a1",
  grid: { stroke: "#202833", width: 1 },
  ticks: { stroke: "#202833", width: 1 },
  font: "11px system-ui, sans-serif",
};

// A legend value: at the cursor, or the newest one while the cursor is elsewhere.
function legendValue(format, pick = (u, si, i) => u.data[si][i]) {
  return (u, v, si, i) => {
    const idx = i ?? u.data[0].length - 1;
    return idx < 0 ? "–" : format(pick(u, si, idx));
  };
}

function makeChart(id, series, yFormat) {
  const el = $(id);
  const opts = {
    width: Math.max(el.clientWidth, 200),
    height: CHART_HEIGHT,
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    scales: {
      // At least a minute wide: a chart opened at start-up shows seconds, not milliseconds.
      x: { time: true, range: (u, min, max) => (max == null ? [min, max] : [Math.min(min, max - MIN_SPAN_S), max]) },
      y: { range: (u, min, max) => [0, max > 0 ? max * 1.12 : 1] },
    },
    axes: [axis, { ...axis, size: 56, values: (u, splits) => splits.map(yFormat) }],
    series: [{ label: "time", value: legendValue(fmtClock) }, ...series],
  };
  const chart = new uPlot(opts, [[], ...series.map(() => [])], el);
  new ResizeObserver(() => {
    if (el.clientWidth > 0 && el.clientWidth !== chart.width) {
      chart.setSize({ width: el.clientWidth, height: CHART_HEIGHT });
    }
  }).observe(el);
  return chart;
}

function line(label, color, extra = {}) {
  return { label, stroke: color, width: 2, points: { show: false }, ...extra };
}

// A stack drawn as overlapping opaque areas: series k is the sum of layers 0..k, drawn
// from the top layer down, so each layer shows as the band above the one below. The
// legend shows the layer's own value, not the running sum.
function stackSeries(labels, colors, layers) {
  const stepped = uPlot.paths.stepped({ align: -1 });
  return labels
    .map((label, k) => ({
      label,
      stroke: colors[k],
      fill: colors[k],
      width: 1,
      paths: stepped,
      points: { show: false },
      value: legendValue(fmtInt, (u, si, i) => layers()[k]?.[i]),
    }))
    .reverse();
}

function stacked(layers) {
  const sums = [];
  let running = layers[0].map(() => 0);
  for (const layer of layers) {
    running = running.map((s, i) => s + layer[i]);
    sums.push(running);
  }
  return sums.reverse();
}

function createCharts() {
  const c = state.charts;
  c.rate = makeChart("chart-rate", [
    line("fetched/s", COLOR.fetched, { fill: "rgba(76, 201, 240, 0.14)", value: legendValue(fmtRate) }),
    line("stored/s", COLOR.stored, { width: 1.5, value: legendValue(fmtRate) }),
  ], fmtTick);
  c.statusLayers = [];
  c.status = makeChart(
    "chart-status",
    stackSeries(STATUS_CLASSES, STATUS_CLASSES.map((k) => COLOR[k]), () => c.statusLayers),
    fmtTick,
  );
  c.frontier = makeChart("chart-frontier", [
    line("fast", COLOR.fast, { value: legendValue(fmtInt) }),
    line("slow", COLOR.slow, { value: legendValue(fmtInt) }),
    line("refresh", COLOR.refresh, { value: legendValue(fmtInt) }),
  ], fmtTick);
  c.turnLayers = [];
  c.turns = makeChart(
    "chart-turns",
    stackSeries(["discovery", "refresh"], [COLOR.discovery, COLOR.refresh], () => c.turnLayers),
    fmtTick,
  );
}

function showData(chartKey, elementId, data, shownMax) {
  state.charts[chartKey].setData(data);
  const el = $(elementId);
  el.dataset.points = String(data[0].length);
  el.dataset.max = String(shownMax);
}

const maxOf = (arrays) => arrays.reduce((m, a) => a.reduce((mm, v) => Math.max(mm, v ?? 0), m), 0);

function drawCharts() {
  const newest = state.rows.length ? state.rows[state.rows.length - 1].at : 0;
  const rows = state.rows.filter((r) => r.at >= newest - state.windowS);
  const x = rows.map((r) => r.at);

  const rate = [rows.map((r) => r.pagesPerSecond), rows.map((r) => r.storedPerSecond)];
  showData("rate", "chart-rate", [x, ...rate], maxOf(rate));

  const statusLayers = STATUS_CLASSES.map((k) => rows.map((r) => r.statuses[k] ?? 0));
  state.charts.statusLayers = statusLayers;
  const statusStack = stacked(statusLayers);
  showData("status", "chart-status", [x, ...statusStack], maxOf(statusStack.slice(0, 1)));

  const frontier = ["fast", "slow", "refresh"].map((k) => rows.map((r) => r.frontier[k]));
  showData("frontier", "chart-frontier", [x, ...frontier], maxOf(frontier));

  const turnLayers = ["discovery", "refresh"].map((k) => rows.map((r) => r.turns[k]));
  state.charts.turnLayers = turnLayers;
  const turnStack = stacked(turnLayers);
  showData("turns", "chart-turns", [x, ...turnStack], maxOf(turnStack.slice(0, 1)));

  const [discovery, refresh] = turnLayers.map((a) => a.reduce((s, v) => s + v, 0));
  $("refresh-share").textContent =
    discovery + refresh ? `${((100 * refresh) / (discovery + refresh)).toFixed(0)}% refresh` : "no turns yet";
}

// ---- numbers ---------------------------------------------------------------------------
function rateNow(stats) {
  if (typeof stats.pagesPerSecondNow === "number") return stats.pagesPerSecondNow;
  const recent = state.rows.slice(-5); // ~10 s: steadier than one 2 s interval
  const seconds = recent.reduce((s, r) => s + r.intervalS, 0);
  return seconds ? recent.reduce((s, r) => s + r.pagesPerSecond * r.intervalS, 0) / seconds : null;
}

function drawTiles(stats) {
  const frontier = stats.frontier || {};
  $("t-fetched").textContent = fmtInt(stats.pagesFetched);
  $("t-stored").textContent = fmtInt(stats.pagesStored);
  $("t-rate-now").textContent = fmtRate(rateNow(stats));
  $("t-rate-overall").textContent = fmtRate(stats.pagesPerSecondOverall);
  $("t-bytes").textContent = fmtBytes(stats.bytesDownloaded);
  $("t-errors").textContent = fmtInt(stats.errors);
  // Issue 14: the same tally as the summary and /metrics, robots.txt failures included.
  const kinds = Object.entries(stats.errorsByKind || {}).sort((a, b) => b[1] - a[1]);
  $("t-errors").title = kinds.map(([kind, n]) => `${kind} ${n}`).join(", ");
  $("t-frontier").textContent = fmtInt((frontier.fast || 0) + (frontier.slow || 0) + (frontier.refresh || 0));
  $("t-sites").textContent = fmtInt(stats.sites ? stats.sites.known : null);
  $("scope-line").textContent = stats.scope || "–";
  drawCodes(stats.statuses || {});
  drawRendering(stats);
}

function classOf(code) {
  if (code.startsWith("error:")) return "error";
  const n = Number(code);
  return n >= 200 && n < 600 ? `${Math.floor(n / 100)}xx` : "other";
}

function drawCodes(statuses) {
  // Pages only: robots.txt and sitemap fetches are counted under "robots:" and "sitemap:".
  const codes = Object.entries(statuses)
    .filter(([code]) => /^\d+$/.test(code) || code.startsWith("error:"))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  $("codes").replaceChildren(...barItems(codes, (code) => COLOR[classOf(code)]));
}

// Counts as bars, one <li> each (.code, .bar, .n), scaled to the largest; `counts` is
// [[key, n], ...] in the order shown.
function barItems(counts, colorOf) {
  const top = Math.max(1, ...counts.map(([, n]) => n));
  return counts.map(([key, n]) => {
    const bar = el("span");
    bar.style.width = `${n ? Math.max(2, (100 * n) / top) : 0}%`;
    bar.style.background = colorOf(key);
    return el("li", {}, [el("span", { className: "code", title: key }, key), el("span", { className: "bar" }, [bar]), el("span", { className: "n" }, fmtInt(n))]);
  });
}

// ---- tables ----------------------------------------------------------------------------
function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  if (typeof children === "string") node.textContent = children;
  else node.append(...children);
  return node;
}

const cell = (text, className = "") => el("td", { className, title: text }, text);
const pill = (condition) => el("td", {}, [el("span", { className: `pill ${condition}` }, condition)]);

function fillTable(id, items, toCells, emptyText) {
  const body = $(id).tBodies[0];
  if (!items.length) {
    const td = el("td", { colSpan: $(id).tHead.rows[0].cells.length }, emptyText);
    body.replaceChildren(el("tr", { className: "empty" }, [td]));
    return;
  }
  body.replaceChildren(...items.map((item) => el("tr", {}, toCells(item))));
}

// Issue 16: counts by reason as bars (as the status codes), then the latest skips.
function drawSkipped(skipped) {
  const counts = Object.entries(skipped.counts).sort((a, b) => b[1] - a[1]);
  $("skip-counts").replaceChildren(...barItems(counts, () => COLOR.skip));
  fillTable("skipped", skipped.skipped, (s) => [
    cell(fmtAgo(s.at)), cell(s.reason, "mono"), cell(s.url, "mono"), cell(s.rule, "mono"),
    cell(s.referrer || "–", "mono"),
  ], "nothing skipped");
}

async function drawSites() {
  const [busy, troubled, errors, skipped] = await Promise.all([
    getJSON("v1/sites?sort=busy&limit=10"),
    getJSON("v1/sites?sort=troubled&limit=10"),
    getJSON("v1/errors?limit=15"),
    getJSON("v1/skipped?limit=20"),
  ]);
  drawSkipped(skipped);
  fillTable("busy", busy, (s) => [
    cell(s.host), cell(fmtInt(s.pagesToday), "num"), cell(fmtInt(s.queueLength), "num"),
    cell(fmtInt(s.avgResponseMs), "num"), pill(s.state),
  ], "no pages fetched yet");
  fillTable("troubled", troubled, (s) => [
    cell(s.host), cell(fmtInt(s.errorCount), "num"), cell(fmtInt(s.consecutiveFailures), "num"),
    pill(s.state), // No page error noted: the failures were its robots.txt or sitemap fetches.
    cell(s.lastError ? `${s.lastError.kind} · ${fmtAgo(s.lastError.at)}` : "robots.txt or sitemap"),
  ], "no site is failing");
  fillTable("errors", errors, (e) => [
    cell(fmtAgo(e.at)), cell(e.host), cell(e.kind, "mono"), cell(e.url, "mono"),
  ], "no errors");
}

// ---- rendering (issue 18) ---------------------------------------------------------------
// The same counters as the summary and /metrics. Known keys are shown at zero, as /metrics
// does; a key the page does not know yet still shows, after them.
const RENDER_KNOWN = {
  candidates: ["empty-mount", "noscript-notice", "script-only-body"],
  ends: ["done", "timeout", "cut", "failed"],
  requests: ["fetched", "robots", "site-busy", "failed"],
};
const RENDER_SENT = ["detected", "forced"]; // render.policy.RenderWhy values that render
// Not an end: the page went back to the queue for another try.
const RENDER_RETRY = "failed-retry";
const RENDER_COLOR = {
  done: "#52b788", timeout: "#f4a261", cut: "#ffd166", failed: "#ef476f",
  [RENDER_RETRY]: "#b5179e", fetched: "#4cc9f0", detected: "#4cc9f0", forced: "#c77dff",
};
const renderColor = (key) => RENDER_COLOR[key] || COLOR.other;
const sumOf = (counts, keep = () => true) =>
  Object.entries(counts).reduce((s, [k, n]) => (keep(k) ? s + n : s), 0);

function withKnown(counts, known = []) {
  const extra = Object.entries(counts).filter(([k]) => !known.includes(k)).sort((a, b) => b[1] - a[1]);
  return [...known.map((k) => [k, counts[k] || 0]), ...extra];
}

function drawRendering(stats) {
  const candidates = stats.renderCandidates || {};
  const decisions = stats.renderDecisions || {};
  const renders = stats.renders || {};
  const requests = stats.renderRequests || {};
  // Pages queued for a browser: shown once /v1/stats has it (not yet, as of issue 18).
  const waiting = typeof stats.rendersWaiting === "number" ? stats.rendersWaiting : null;
  $("render-waiting").textContent = waiting == null ? "" : ` · ${fmtInt(waiting)} waiting`;
  const counted = [candidates, decisions, renders, requests].some((c) => sumOf(c) > 0);
  const ran = counted || waiting > 0;
  $("render-none").textContent = "no page needed a browser";
  $("render-none").hidden = ran;
  $("render-groups").hidden = !ran;
  if (!ran) return;

  $("r-candidates").textContent = fmtInt(sumOf(candidates));
  $("render-candidates").replaceChildren(...barItems(withKnown(candidates, RENDER_KNOWN.candidates), () => COLOR.refresh));
  $("r-sent").textContent = fmtInt(sumOf(decisions, (why) => RENDER_SENT.includes(why)));
  $("render-decisions").replaceChildren(...barItems(withKnown(decisions, RENDER_SENT), renderColor));
  $("r-ended").textContent = fmtInt(sumOf(renders, (how) => how !== RENDER_RETRY));
  $("render-ends").replaceChildren(...barItems(withKnown(renders, RENDER_KNOWN.ends), renderColor));
  // Refused: trawl would not make the request (robots.txt, the site busy, not its site...).
  const made = requests.fetched || 0;
  const failed = requests.failed || 0;
  const refused = sumOf(requests) - made - failed;
  $("r-requests").textContent = `${fmtInt(made)} made · ${fmtInt(refused)} refused · ${fmtInt(failed)} failed`;
  $("render-requests").replaceChildren(...barItems(withKnown(requests, RENDER_KNOWN.requests), renderColor));
}

// ---- the loop ----------------------------------------------------------------------------
function addRows(rows) {
  for (const row of rows) {
    if (row.at > state.lastAt) state.rows.push(row);
  }
  if (state.rows.length) state.lastAt = state.rows[state.rows.length - 1].at;
  const oldest = state.lastAt - KEEP_S;
  const drop = state.rows.findIndex((r) => r.at >= oldest);
  if (drop > 0) state.rows.splice(0, drop);
}

function setLive(ok, detail) {
  $("live").className = `live ${ok ? "ok" : "down"}`;
  $("live-text").textContent = ok
    ? `live · ${fmtClock(Date.now() / 1000)}`
    : `no answer from trawl, retrying (${detail})`;
}

async function poll() {
  try {
    const [history, stats] = await Promise.all([
      getJSON(`v1/stats/history?since=${state.lastAt}`),
      getJSON("v1/stats"),
    ]);
    addRows(history.rows);
    drawCharts();
    drawTiles(stats);
    if (state.polls % SITES_EVERY === 0) await drawSites();
    setLive(true);
    document.body.dataset.ready = "1";
  } catch (err) {
    setLive(false, err.message || String(err));
  }
  state.polls += 1;
  setTimeout(poll, POLL_MS); // not setInterval: a slow answer never stacks up polls
}

function setupWindowButtons() {
  for (const button of document.querySelectorAll(".window button")) {
    button.addEventListener("click", () => {
      state.windowS = Number(button.dataset.window);
      for (const b of document.querySelectorAll(".window button")) b.classList.toggle("on", b === button);
      drawCharts();
    });
  }
}

createCharts();
setupWindowButtons();
poll();
