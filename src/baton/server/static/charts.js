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

async function interactiveChart(holder, spec) {
  const copy = JSON.parse(JSON.stringify(spec)); // the runtime annotates what it is given
  delete copy.$schema; // the page's runtime reads the server's Vega-Lite v5 specs; no version warning
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

async function chart(spec) {
  if (!spec || typeof spec !== "object" || !Object.keys(spec).length) return null;
  const holder = el("figure", { class: "chart" });
  const canvas = el("div", { class: "vega" });
  holder.append(canvas);
  if (typeof window.vegaEmbed === "function" && window.vega) {
    try {
      await interactiveChart(canvas, spec);
      holder.dataset.mode = "interactive";
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

async function fallback(holder, spec, reason) {
  try {
    await staticChart(holder, spec);
    holder.dataset.mode = "static";
    if (reason) holder.title = "Interactive chart unavailable: " + reason.message;
  } catch (err) {
    holder.append(el("div", { class: "meta" }, "Chart unavailable: " + err.message));
  }
}
