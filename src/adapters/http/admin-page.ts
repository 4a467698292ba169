/**
 * The admin page (CONTRACT §9): plain HTML, CSS and JavaScript served by the service itself, no
 * build step. It holds no data: it asks for TIMER_ADMIN_TOKEN (kept in sessionStorage, so it goes
 * with the tab) and calls /v1 with it. Kept in a .ts module so that `tsc` carries it into dist/.
 * Data is written into the page with textContent only, and invisible or bidirectional control
 * characters are shown as escapes (\u{202E}), so an id cannot pose as another one. Actions (CONTRACT
 * §14) each ask for confirmation and send the token in a header, never a cookie.
 */

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>timer-service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/admin/app.css">
<script src="/admin/app.js" defer></script>
</head>
<body>
<header><h1>timer-service</h1><span id="status"></span><button id="logout" hidden>Log out</button></header>
<form id="login">
  <label for="token">Admin token (TIMER_ADMIN_TOKEN, or the read-only TIMER_ADMIN_READ_TOKEN)</label>
  <input id="token" type="password" autocomplete="off" required>
  <button type="submit">Open</button>
  <p id="login-error" role="alert"></p>
</form>
<main id="main" hidden>
  <section>
    <h2>Timers by state, per tenant</h2>
    <p>Fires per minute (all tenants, this instance, last 10 min): <span id="sparkline"></span> <span id="fire-rate"></span></p>
    <table id="counts"><thead><tr><th>tenant</th><th>Scheduled</th><th>Reached</th><th>Missed</th><th>Cancelled</th><th>Fired</th><th>Completed</th><th>Failed</th><th>TimedOut</th><th>next due</th><th>oldest overdue</th></tr></thead><tbody></tbody></table>
  </section>
  <p><label for="tenant">Tenant</label> <select id="tenant"></select></p>
  <p id="action-result" role="status"></p>
  <section>
    <h2>Coming up: due per hour, next 24 h</h2>
    <div id="chart"></div>
  </section>
  <section>
    <h2>Next due</h2>
    <table id="next"><thead><tr><th>serviceCallId</th><th>dueAt</th><th>state</th><th></th></tr></thead><tbody></tbody></table>
  </section>
  <section>
    <h2>Recent fires</h2>
    <table id="fires"><thead><tr><th>serviceCallId</th><th>dueAt</th><th>reachedAt</th><th>lag</th></tr></thead><tbody></tbody></table>
  </section>
  <section>
    <h2>Not done (Failed, TimedOut, Missed), latest first</h2>
    <form id="bulk"><label for="bulk-prefix">Retry every Failed timer of this tenant whose serviceCallId starts with</label>
      <input id="bulk-prefix" placeholder="(any)"> <button type="submit" id="bulk-retry">Retry all Failed…</button></form>
    <table id="undone"><thead><tr><th>serviceCallId</th><th>state</th><th>attempts</th><th>last reason</th><th>changed</th><th>createdBy</th><th></th></tr></thead><tbody></tbody></table>
  </section>
  <section>
    <h2>Look up a timer</h2>
    <form id="lookup"><input id="lookup-id" placeholder="serviceCallId" required> <button type="submit">Look up</button></form>
    <pre id="lookup-result"></pre>
    <table id="lookup-history" hidden><caption>Its history, oldest first: why it did or did not fire</caption>
      <thead><tr><th>at</th><th>what</th><th>details</th></tr></thead><tbody></tbody></table>
  </section>
</main>
</body>
</html>
`;

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5rem 2rem;color:#222}
header{display:flex;gap:1rem;align-items:baseline}h1{font-size:1.3rem}h2{font-size:1.05rem;margin:1.2rem 0 .4rem}
table{border-collapse:collapse}th,td{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f4f4f4}caption{text-align:left;color:#666;padding:.3rem 0}tr.notable td{background:#fff7e6}#status{color:#666}#login-error{color:#b00}pre{background:#f7f7f7;padding:.6rem;max-width:60rem;overflow:auto}
td.num{text-align:right}.late{color:#b00}.escaped{color:#a0a;font-family:monospace}
#chart svg{border:1px solid #eee;background:#fcfcfc}#chart .bar{fill:#4a7bd0}#chart .overdue{fill:#c0392b}#chart text{font-size:10px;fill:#555}
#action-result{min-height:1.4em;font-weight:600}#action-result.error{color:#b00}td button{font-size:12px}
`;

const JS = `"use strict";
const KEY = "timer-service-admin-token";
const REFRESH_MS = 3000;
const $ = (id) => document.getElementById(id);
let timer;

async function api(path, options) {
  const headers = { Authorization: "Bearer " + sessionStorage.getItem(KEY) };
  const init = options && options.body !== undefined
    ? { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(options.body) }
    : { method: options ? "POST" : "GET", headers };
  const response = await fetch(path, init);
  if (response.status === 401) { logout("The token was refused."); throw new Error("unauthorized"); }
  return { status: response.status, body: await response.json() };
}

// Format, bidi and other invisible characters (a right-to-left override can make "exe.txt" read
// "txt.exe") and controls but line breaks and tabs, shown escaped so that every character of an id is visible.
const HIDDEN = /(?![\\n\\t])[\\p{Cf}\\p{Cc}\\p{Zl}\\p{Zp}\\p{Co}\\p{Cn}\\u115F\\u1160\\u3164\\uFFA0\\u034F\\u180B-\\u180D\\uFE00-\\uFE0F]/gu;
function visible(text) {
  return String(text).replace(HIDDEN, (c) => "\\\\u{" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "}");
}

function cell(row, text, className) {
  const td = row.insertCell();
  const raw = text === null || text === undefined ? "" : String(text);
  td.textContent = visible(raw);
  if (td.textContent !== raw) td.classList.add("escaped");
  if (className) td.classList.add(className);
  return td;
}

function actionCell(row, label, handler) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = label;
  button.addEventListener("click", handler);
  row.insertCell().append(button);
}

function say(text, isError) {
  const result = $("action-result");
  result.textContent = visible(text);
  result.className = isError ? "error" : "";
}

function timerPath(tenant, id) {
  return "/v1/tenants/" + encodeURIComponent(tenant) + "/timers/" + encodeURIComponent(id);
}

function refused(status, body) {
  if (status === 403) return "the read-only token cannot act (TIMER_ADMIN_READ_TOKEN); log in with TIMER_ADMIN_TOKEN";
  return (body && body.error && body.error.message) || "HTTP " + status;
}

/** Retry or cancel one timer after a confirmation, then show the state it reaches. */
async function act(action, tenant, timer) {
  const id = timer.serviceCallId;
  const verb = action === "retry" ? "Retry" : "Cancel";
  if (!confirm(verb + " timer " + visible(id) + " of tenant " + tenant + " (now " + timer.state + ")?")) return;
  const { status, body } = await api(timerPath(tenant, id) + "/" + action, {});
  if (status !== 202) return say(verb + " of " + id + " refused: " + refused(status, body), true);
  say(verb + " of " + id + " sent; waiting for the timer to change…");
  for (let i = 0; i < 50; i++) {
    const now = (await api(timerPath(tenant, id))).body.timer;
    if (now && (now.generation !== timer.generation || now.state !== timer.state)) {
      say(verb + " of " + id + ": now " + now.state + " (generation " + now.generation + ")");
      return refresh();
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  say(verb + " of " + id + " sent (command " + body.commandIds[0] + "); the timer has not changed yet");
}

/** Counts the tenant's Failed timers with the prefix, asks, then sends the bulk retry. */
async function bulkRetry(event) {
  event.preventDefault();
  const tenant = $("tenant").value;
  const prefix = $("bulk-prefix").value;
  const base = "/v1/tenants/" + encodeURIComponent(tenant) + "/timers?state=Failed&limit=1000" + (prefix ? "&serviceCallIdPrefix=" + encodeURIComponent(prefix) : "");
  let count = 0;
  let cursor = null;
  for (let pages = 0; pages < 10; pages++) {
    const page = (await api(base + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""))).body;
    count += page.timers.length;
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  const shown = cursor ? "more than " + count : String(count);
  if (count === 0) return say("No Failed timers of " + tenant + (prefix ? " starting with " + prefix : "") + " to retry.");
  if (!confirm("Retry " + shown + " Failed timers of tenant " + tenant + (prefix ? " starting with " + visible(prefix) : "") + "?")) return;
  const { status, body } = await api("/v1/tenants/" + encodeURIComponent(tenant) + "/timers/retry", {
    body: prefix ? { state: "Failed", serviceCallIdPrefix: prefix } : { state: "Failed" },
  });
  if (status !== 202) return say("Bulk retry refused: " + refused(status, body), true);
  say("Bulk retry: " + body.commandIds.length + " retry commands sent" + (body.more ? "; more remain, run it again" : "") + ".");
  setTimeout(refresh, 500);
}

function fill(tableId, rows, render) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren();
  for (const item of rows) render(body.insertRow(), item);
  if (rows.length === 0) cell(body.insertRow(), "none");
}

async function refresh() {
  try {
    const tenants = (await api("/v1/tenants")).body.tenants;
    const stats = await Promise.all(tenants.map((t) => api("/v1/tenants/" + encodeURIComponent(t) + "/stats").then((r) => r.body)));
    fill("counts", stats, (row, s) => {
      cell(row, s.tenantId);
      for (const n of [s.scheduled, s.reached, s.missed, s.cancelled, s.fired, s.completed, s.failed, s.timedOut]) cell(row, n, "num");
      cell(row, s.nextDueAt);
      cell(row, s.oldestOverdueAt, s.oldestOverdueAt ? "late" : "");
    });
    const select = $("tenant");
    const chosen = select.value || tenants[0] || "";
    select.replaceChildren(...tenants.map((t) => new Option(t, t, false, t === chosen)));
    await sampleFires().catch(() => undefined);
    if (chosen) await showTenant(chosen);
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (error) {
    $("status").textContent = "refresh failed: " + error.message;
  }
}

const SVG = "http://www.w3.org/2000/svg";
function svg(name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The tenant's Scheduled timers overdue now and per hour for 24 h, as an inline SVG bar chart. */
function drawChart(histogram) {
  const bars = [{ label: "overdue", count: histogram.overdue, capped: histogram.overdueCapped, overdue: true }]
    .concat(histogram.hours.map((h, i) => ({ label: "+" + i + "h (" + h.start.slice(11, 16) + "Z)", count: h.count, capped: histogram.capped })));
  const W = 22, H = 120, TOP = 14, BOTTOM = 18;
  const max = Math.max(1, ...bars.map((b) => b.count));
  const chart = svg("svg", { width: bars.length * W + 10, height: H + TOP + BOTTOM, role: "img", "aria-label": "timers due per hour" });
  bars.forEach((b, i) => {
    const height = Math.round((b.count / max) * H);
    const x = 5 + i * W;
    const rect = svg("rect", { x, y: TOP + H - height, width: W - 4, height, class: b.overdue ? "overdue" : "bar" });
    rect.append(svg("title", {}, b.label + ": " + b.count + (b.capped ? "+" : "")));
    chart.append(rect);
    if (b.count > 0) chart.append(svg("text", { x: x + (W - 4) / 2, y: TOP + H - height - 2, "text-anchor": "middle" }, b.count > 9999 ? Math.round(b.count / 1000) + "k" : String(b.count)));
    if (b.overdue || (i - 1) % 6 === 0) chart.append(svg("text", { x, y: TOP + H + 12 }, b.overdue ? "late" : "+" + (i - 1) + "h"));
  });
  $("chart").replaceChildren(chart);
}

// Fires per minute from what the service already counts (timer_schedules_processed_total on the
// open /metrics), sampled at each refresh; this instance's counter, kept for 10 minutes.
const samples = [];
async function sampleFires() {
  const text = await (await fetch("/metrics")).text();
  const match = /^timer_schedules_processed_total (\\d+(?:\\.\\d+)?)$/m.exec(text);
  if (!match) return;
  const now = Date.now();
  samples.push({ at: now, total: Number(match[1]) });
  while (samples.length > 0 && samples[0].at < now - 600000) samples.shift();
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const minutes = (samples[i].at - samples[i - 1].at) / 60000;
    rates.push(minutes > 0 ? Math.max(0, samples[i].total - samples[i - 1].total) / minutes : 0);
  }
  const W = 160, H = 24;
  const max = Math.max(1, ...rates);
  const points = rates.map((r, i) => (rates.length < 2 ? 0 : (i / (rates.length - 1)) * W).toFixed(1) + "," + (H - (r / max) * (H - 2) - 1).toFixed(1));
  const line = svg("svg", { width: W, height: H, role: "img", "aria-label": "fires per minute" });
  line.append(svg("polyline", { points: points.join(" "), fill: "none", stroke: "#4a7bd0", "stroke-width": 1.5 }));
  $("sparkline").replaceChildren(line);
  $("fire-rate").textContent = rates.length === 0 ? "" : Math.round(rates[rates.length - 1]) + "/min now";
}

async function showTenant(tenant) {
  drawChart((await api("/v1/tenants/" + encodeURIComponent(tenant) + "/due-histogram")).body);
  const base = "/v1/tenants/" + encodeURIComponent(tenant) + "/timers?";
  const next = (await api(base + "state=Scheduled&limit=10")).body.timers;
  fill("next", next, (row, t) => {
    cell(row, t.serviceCallId); cell(row, t.dueAt); cell(row, t.state);
    actionCell(row, "Cancel", () => act("cancel", tenant, t).catch((e) => say(e.message, true)));
  });
  // Newest fires: Reached timers due in the last 10 minutes (the last minute when there are more).
  let page = (await api(base + "state=Reached&limit=1000&dueAfter=" + new Date(Date.now() - 600000).toISOString())).body;
  if (page.nextCursor) page = (await api(base + "state=Reached&limit=1000&dueAfter=" + new Date(Date.now() - 60000).toISOString())).body;
  const fires = page.timers.slice(-20).reverse();
  fill("fires", fires, (row, t) => {
    cell(row, t.serviceCallId); cell(row, t.dueAt); cell(row, t.reachedAt);
    cell(row, t.reachedAt ? (Date.parse(t.reachedAt) - Date.parse(t.dueAt)) + " ms" : "", "num");
  });
  // Timers whose work never got done (CONTRACT §11, §10), the latest 20 of each state, newest first.
  const undone = (await Promise.all(["Failed", "TimedOut", "Missed"].map((s) => api(base + "state=" + s + "&order=changedDesc&limit=20"))))
    .flatMap((r) => r.body.timers)
    .sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt));
  fill("undone", undone, (row, t) => {
    cell(row, t.serviceCallId); cell(row, t.state); cell(row, t.attempt ?? "", "num"); cell(row, t.reason ?? ""); cell(row, t.updatedAt); cell(row, t.createdBy ?? "");
    actionCell(row, "Retry", () => act("retry", tenant, t).catch((e) => say(e.message, true)));
  });
}

async function lookup(event) {
  event.preventDefault();
  const tenant = $("tenant").value;
  const id = $("lookup-id").value;
  const { status, body } = await api(timerPath(tenant, id) + "?history=true");
  $("lookup-result").textContent = visible(status === 404 ? "No timer " + id + " for tenant " + tenant + "." : JSON.stringify(body.timer, null, 2));
  const rows = $("lookup-history").tBodies[0];
  rows.replaceChildren();
  const history = (body && body.history) || [];
  $("lookup-history").hidden = history.length === 0;
  for (const entry of history) {
    const row = rows.insertRow();
    const [what, details] = describeEntry(entry);
    cell(row, entry.at); cell(row, what); cell(row, details);
    if (entry.outcome === "ignored" || entry.outcome === "rejected" || entry.kind !== "command" && entry.kind !== "fired" || entry.published === false) row.classList.add("notable");
  }
}

/** One history entry (CONTRACT §19) as a line of the timeline: what happened, and the details that say why. */
function describeEntry(e) {
  const parts = (list) => list.filter((p) => p !== undefined && p !== null && p !== "").join("; ");
  if (e.kind === "command") {
    const operator = e.operator ? (e.operator.via === "http" ? "operator action over HTTP, with the admin token" : "operator action over NATS, no token") : "";
    return [e.type + " " + e.outcome + (e.code ? " " + e.code : ""), parts([e.reason, operator, "command " + (e.commandId || "without id"), "timestampMs " + e.timestampMs])];
  }
  if (e.kind === "timeout") return ["completion time-out of attempt " + e.attempt, "then " + e.then];
  const occurrence = e.occurrence === undefined ? "" : "occurrence " + e.occurrence;
  const what = e.kind + (e.published ? "" : ", not published") + (e.attempt > 1 ? " (attempt " + e.attempt + ")" : "");
  return [what, parts([e.reason, occurrence, e.lateMs + " ms late", "event " + e.eventId])];
}

function start() {
  $("login").hidden = true;
  $("main").hidden = false;
  $("logout").hidden = false;
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, REFRESH_MS);
}

function logout(message) {
  sessionStorage.removeItem(KEY);
  clearInterval(timer);
  $("main").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("token").value);
    $("token").value = "";
    start();
  });
  $("logout").addEventListener("click", () => logout());
  $("tenant").addEventListener("change", () => refresh());
  $("bulk").addEventListener("submit", (event) => bulkRetry(event).catch((e) => say(e.message, true)));
  $("lookup").addEventListener("submit", (event) => lookup(event).catch((e) => ($("lookup-result").textContent = e.message)));
  if (sessionStorage.getItem(KEY)) start();
});
`;

export interface AdminAsset {
  readonly contentType: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Path → asset. */
export const ADMIN_ASSETS: ReadonlyMap<string, AdminAsset> = new Map<string, AdminAsset>([
  ["/", { contentType: "text/html; charset=utf-8", body: HTML, headers: { "Content-Security-Policy": CSP, "X-Frame-Options": "DENY" } }],
  ["/admin/app.js", { contentType: "text/javascript; charset=utf-8", body: JS, headers: {} }],
  ["/admin/app.css", { contentType: "text/css; charset=utf-8", body: CSS, headers: {} }],
]);
