// Charts: interactive in the page (tooltips on hover) with the Vega-Lite runtime shipped in
// the package (static/vendor/, no CDN); the server-rendered SVG (/v1/charts/render, the same
// renderer the CLI, notebooks and exports use) when the runtime is missing or fails.
//
// What the runtime may do is narrowed: it loads nothing (a spec naming a URL, or an image
// mark, gets no network access), evaluates expressions with Vega's interpreter (no eval,
// so the page's Content-Security-Policy needs no 'unsafe-eval'), and its tooltips escape
// every value (vega-tooltip's default sanitiser: a cell holding markup shows as text).
"use strict";

function chartTitle(spec) {
  const title = spec.title;
  if (typeof title === "string") return title;
  if (title && typeof title.text === "string") return title.text;
  return "chart";
}

function noNetworkLoader() {
  const loader = window.vega.loader();
  const refuse = () => Promise.reject(new Error("charts load no external data"));
  loader.load = refuse;
  loader.sanitize = refuse;
  loader.http = refuse;
  loader.file = refuse;
  return loader;
}

// --- re-flow: a chart is drawn at the width it has, never scaled down as a picture ----------
// (scaled, a 560 px chart on a 390 px phone had 5 px labels). Labels stay at a readable size
// and are thinned, not squeezed, when they would overlap.
const READABLE = { axis: { labelFontSize: 11, titleFontSize: 12, labelOverlap: true }, legend: { labelFontSize: 11, titleFontSize: 12 },
  title: { fontSize: 14, subtitleFontSize: 12 } };

const ANSWER_CHROME = 34, TURN_WIDTH = 1100; // an answer's padding and border; a turn's width (style.css)

function availableWidth(holder) {
  const inner = (box) => { const s = getComputedStyle(box); return box.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); };
  const answer = holder.closest(".answer");
  const width = answer ? inner(answer) : Math.min(TURN_WIDTH, inner($("#chat"))) - ANSWER_CHROME; // not in the page yet
  return Math.max(200, Math.floor(width));
}

function fitted(spec, width) {
  const copy = JSON.parse(JSON.stringify(spec)); // the runtime annotates what it is given
  delete copy.$schema; // the page's runtime reads the server's Vega-Lite v5 specs; no version warning
  copy.config = { ...READABLE, ...(copy.config || {}) };
  if (copy.mark?.type !== "arc" && copy.mark?.type !== "text" && typeof copy.width === "number") {
    copy.width = Math.min(copy.width, width);
    copy.autosize = { type: "fit-x", contains: "padding" };
  }
  if (tooNarrowForColumns(copy, width)) lieDown(copy);
  return copy;
}

// Bars standing side by side need room for their labels: on a narrow screen, more categories
// than fit (MIN_COLUMN px each) are drawn lying down, one labelled row each, instead of
// keeping every third label.
const MIN_COLUMN = 44;
function tooNarrowForColumns(spec, width) {
  const enc = spec.encoding || {};
  if (spec.mark?.type !== "bar" || enc.y?.type !== "quantitative" || !["nominal", "ordinal"].includes(enc.x?.type) || enc.xOffset) return false;
  const categories = new Set((spec.data?.values || []).map((v) => v[unescapeField(enc.x.field)])).size;
  return categories * MIN_COLUMN > width;
}

function lieDown(spec) {
  const { x, y } = spec.encoding;
  const category = { ...x, axis: { ...(x.axis || {}), labelAngle: 0, labelAlign: "right", labelLimit: 110 } };
  if (category.sort === "-y") category.sort = "-x";
  spec.encoding = { ...spec.encoding, x: y, y: category };
  spec.height = { step: 20 };
}

async function interactiveChart(holder, spec, width) {
  const copy = fitted(spec, width);
  const result = await window.vegaEmbed(holder, copy, {
    actions: false, renderer: "svg", ast: true, loader: noNetworkLoader(), hover: true,
    tooltip: { theme: "light" }, logLevel: 0,
  });
  const svg = holder.querySelector("svg");
  if (svg) { svg.setAttribute("role", "img"); svg.setAttribute("aria-label", chartTitle(spec)); }
  return result;
}

async function staticChart(holder, spec) {
  const svg = await (await api("/v1/charts/render", { method: "POST", body: JSON.stringify({ spec }) })).text();
  const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
  holder.append(el("img", { src: url, alt: chartTitle(spec) }));
}

// --- the chart-type switch: only the types the data allows --------------------------------
// The server chose the type (baton.viz.choose); the switch offers the others that fit the
// same columns: a single series over time as line, bar or area; one measure by category as
// bar, or as a pie when it has 2-8 slices and none is negative. Anything else (several
// series, stacks, scatter, a big number) keeps its one type.
const MAX_PIE_SLICES = 8;
const unescapeField = (field) => String(field).replace(/\\(.)/g, "$1");

function chartParts(spec) {
  const kind = spec.usermeta?.baton?.viz_type;
  const enc = spec.encoding || {};
  if (spec.transform || spec.layer || enc.color && kind !== "pie") return null;
  if (kind === "pie") return { kind, category: enc.color, measure: enc.theta };
  if (kind !== "line" && kind !== "bar") return null;
  const measureAxis = enc.x?.type === "quantitative" ? "x" : "y";
  return { kind, category: enc[measureAxis === "x" ? "y" : "x"], measure: enc[measureAxis] };
}

function chartKinds(spec) {
  const parts = chartParts(spec);
  if (!parts || !parts.category?.field || !parts.measure?.field) return [];
  const values = spec.data?.values || [];
  const measure = unescapeField(parts.measure.field);
  const overTime = parts.category.type === "temporal" || parts.category.type === "ordinal" || parts.kind === "line";
  const kinds = overTime ? ["line", "bar", "area"] : ["bar"];
  const sliceable = values.length >= 2 && values.length <= MAX_PIE_SLICES && values.every((v) => typeof v[measure] === "number" && v[measure] >= 0);
  if (!overTime && sliceable) kinds.push("pie");
  if (!kinds.includes(parts.kind)) kinds.unshift(parts.kind);
  return kinds.length > 1 ? kinds : [];
}

function switchedSpec(spec, kind) {
  const parts = chartParts(spec);
  if (kind === parts.kind) return spec;
  const { category, measure } = parts;
  const title = (channel) => channel.title === undefined ? unescapeField(channel.field) : channel.title;
  const base = { $schema: spec.$schema, title: spec.title, data: spec.data, usermeta: spec.usermeta, config: spec.config };
  const tooltip = spec.encoding.tooltip;
  const value = { field: measure.field, type: "quantitative", title: title(measure), ...(measure.axis ? { axis: measure.axis } : {}) };
  if (kind === "pie")
    return { ...base, width: 300, height: 300, view: { stroke: null }, mark: { type: "arc", tooltip: true }, encoding: {
      theta: { field: measure.field, type: "quantitative", stack: true },
      color: { field: category.field, type: "nominal", title: title(category), sort: { field: measure.field, order: "descending" } },
      order: { field: measure.field, type: "quantitative", sort: "descending" }, tooltip } };
  const type = category.type === "quantitative" ? "nominal" : category.type;
  const axis = { field: category.field, type, title: title(category), ...(category.timeUnit ? { timeUnit: category.timeUnit } : {}),
    ...(category.axis ? { axis: category.axis } : {}), ...(type === "nominal" && kind === "bar" ? { sort: "-y" } : {}) };
  const mark = kind === "line" ? { type: "line", point: true, tooltip: true } : { type: kind, tooltip: true };
  return { ...base, width: 560, height: 320, mark, encoding: { x: axis, y: value, tooltip } };
}

async function draw(holder, spec) {
  const canvas = el("div", { class: "vega" });
  holder.querySelector(".vega, img, .meta")?.remove();
  holder.append(canvas);
  holder.spec = spec;
  if (typeof window.vegaEmbed === "function" && window.vega) {
    try {
      await interactiveChart(canvas, spec, availableWidth(holder));
      holder.dataset.mode = "interactive";
      holder.dataset.width = String(availableWidth(holder));
      return holder;
    } catch (err) {
      canvas.remove();
      await fallback(holder, spec, err);
      return holder;
    }
  }
  canvas.remove();
  await fallback(holder, spec, null);
  return holder;
}

async function chart(spec) {
  if (!spec || typeof spec !== "object" || !Object.keys(spec).length) return null;
  const holder = el("figure", { class: "chart" });
  const kinds = chartKinds(spec);
  if (kinds.length) {
    const current = chartParts(spec).kind;
    const bar = el("div", { class: "chart-kinds", role: "group", "aria-label": "Chart type" }, ...kinds.map((kind) =>
      el("button", { type: "button", class: "secondary small", "data-kind": kind, "aria-pressed": String(kind === current),
        onclick: async () => {
          for (const b of bar.children) b.setAttribute("aria-pressed", String(b.dataset.kind === kind));
          await draw(holder, switchedSpec(spec, kind));
        } }, kind)));
    holder.append(bar);
  }
  await draw(holder, spec);
  return holder;
}

// A chart drawn for one width is drawn again when its column gets narrower or wider (a phone
// turned, a window resized).
let reflowTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(reflowTimer);
  reflowTimer = setTimeout(() => {
    for (const holder of document.querySelectorAll(".chart[data-mode=interactive]")) {
      if (!holder.isConnected || !holder.spec || Math.abs(availableWidth(holder) - Number(holder.dataset.width)) < 24) continue;
      draw(holder, holder.spec).catch(() => {});
    }
  }, 200);
});

async function fallback(holder, spec, reason) {
  try {
    await staticChart(holder, spec);
    holder.dataset.mode = "static";
    if (reason) holder.title = "Interactive chart unavailable: " + reason.message;
  } catch (err) {
    holder.append(el("div", { class: "meta" }, "Chart unavailable: " + err.message));
  }
}
