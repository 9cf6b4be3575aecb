// Baton's page, shared helpers: building elements, calling the API, reading its values.
// No build step, no CDN. Every string from the server (answers, column names, cells,
// document passages) is inserted as text: elements are built here, never parsed from HTML.
"use strict";

const state = { sessionId: null, busy: false };
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// Small line icons drawn here (no icon font, no emoji font needed on the machine).
const ICONS = {
  up: "M7 10v11H3V10h4zm2 11h9.2a2 2 0 0 0 2-1.7l1.2-7A2 2 0 0 0 19.4 10H14V5.5A2.5 2.5 0 0 0 11.5 3L9 10v11z",
  down: "M7 14V3H3v11h4zm2-11h9.2a2 2 0 0 1 2 1.7l1.2 7a2 2 0 0 1-2 2.3H14v4.5a2.5 2.5 0 0 1-2.5 2.5L9 14V3z",
};
function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}

// A refusal or failure the server explained: its words, and its code when it gave one.
class ApiError extends Error {
  constructor(message, status, code) { super(message); this.status = status; this.code = code || null; }
}

const SERVER_DOWN = "The Baton server cannot be reached: it may have stopped, or the network is down. " +
  "Start it again (baton demo or baton serve) and retry.";

// fetch() says only "Failed to fetch" when the server is gone: say what that means.
async function request(path, options = {}) {
  try {
    return await fetch(path, { credentials: "same-origin", ...options });
  } catch (err) {
    if (err && err.name === "AbortError") throw err;
    throw new ApiError(SERVER_DOWN, 0, "server_unreachable");
  }
}

async function api(path, options = {}) {
  const response = await request(path, { ...options, headers: { "Content-Type": "application/json", ...(options.headers || {}) } });
  if (response.status === 401) { showLogin(); throw new ApiError("You are not logged in.", 401, "not_logged_in"); }
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    const detail = body.detail;
    const text = typeof detail === "string" ? detail : detail ? JSON.stringify(detail) : `${response.status} ${response.statusText}`;
    throw new ApiError(text, response.status, body.error_code);
  }
  return response;
}

// --- values: the API tags dates, decimals and DataFrames ({"$type": ...}) -------------------
function plain(value) {
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    if (value.$type === "dataframe") return value.rows.map((row) => Object.fromEntries(value.columns.map((c, i) => [c, plain(row[i])])));
    if (value.$type === "decimal") { const n = Number(value.value); return Number.isFinite(n) && Math.abs(n) < 2 ** 53 ? n : value.value; }
    if (value.$type) return value.value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

// --- numbers as a person reads them: the rule of baton/numbers.py (format_number) ----------
// At least three significant digits: 1 and more with 2 decimals ("1,234,567.89"), smaller
// values with as many as three significant digits need ("0.00123"); a nonzero value never
// reads 0 (scientific below 1e-6: "1.2e-08"); whole numbers stay whole. Cells keep the exact
// value in their title, and the CSV export is exact.
const SIGNIFICANT = 3;
const numberFormats = new Map();
function cachedNumberFormat(grouping, places) {
  const key = `${grouping}:${places}`;
  if (!numberFormats.has(key)) {
    const options = { useGrouping: grouping, minimumFractionDigits: Math.min(2, places), maximumFractionDigits: places };
    numberFormats.set(key, new Intl.NumberFormat(undefined, options));
  }
  return numberFormats.get(key);
}

// "1 row", "12 rows", "1,204 rows": one wording everywhere in the page (never "row(s)").
function plural(count, noun, many = noun + "s") {
  return `${typeof count === "number" ? formatNumber(count) : count} ${count === 1 ? noun : many}`;
}

function formatNumber(value, grouping = true) {
  if (typeof value !== "number") return String(value);
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "inf" : "-inf";
  if (value === 0) return "0"; // -0 too
  const magnitude = Math.abs(value);
  const [mantissa, exponent] = value.toExponential(SIGNIFICANT - 1).split("e"); // "1.20", "-8"
  if (magnitude < 1e-6 || magnitude >= 1e18) // as Python writes it: "1.2e-08"
    return mantissa.replace(/\.?0+$/, "") + "e" + exponent[0] + exponent.slice(1).padStart(2, "0");
  if (Number.isInteger(value)) return cachedNumberFormat(grouping, 0).format(value);
  const places = magnitude >= 1 ? 2 : Math.max(2, SIGNIFICANT - 1 - Number(exponent));
  return cachedNumberFormat(grouping, places).format(value);
}

// Refusals (an ask-back, "what I answer without a model", "needs a model", unsafe SQL) and
// failures offer no thumbs: there is no answer to judge. Only failures are shown as errors
// (isFailure); an ask-back or the no-model answer is information, shown as such.
function isRefusal(answer) {
  const m = answer.metadata || {};
  return Boolean(isFailure(answer) || m.did_you_mean?.length || m.followup === "needs_model" || isNoModelAnswer(answer));
}

function isFailure(answer) {
  return !isNoModelAnswer(answer) && Boolean(answer.error || answer.error_code || answer.response_type === "error");
}

// The answer given because no model is configured: said by its code, never by its text.
function isNoModelAnswer(answer) {
  return !answer.data && answer.error_code === "model_not_configured";
}
