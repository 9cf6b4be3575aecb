// Baton's page: no build step, no CDN. Everything shown comes from the API; text is always
// inserted as text (answers and data are untrusted), charts arrive as server-rendered SVG
// shown through <img>, which cannot run scripts.
"use strict";

const state = { sessionId: null, busy: false };
const $ = (sel) => document.querySelector(sel);
const MAX_TABLE_ROWS = 500;

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

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options,
    headers: { "Content-Type": "application/json", ...(options.headers || {}) } });
  if (response.status === 401) { showLogin(); throw new Error("not logged in"); }
  if (!response.ok) {
    const detail = (await response.json().catch(() => ({}))).detail;
    throw new Error(typeof detail === "string" ? detail : detail ? JSON.stringify(detail) : `${response.status} ${response.statusText}`);
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

const NO_GROUPING = /(year|^yr$|(^|_)id$|code|zip|postal)/i; // 2024 is a year, not "2,024"

// One number format per column: as many decimals (up to 2) as its values need, so a column
// of amounts reads 979,717.40 beside 752,670.22, not 979,717.4.
function columnFormat(rows, column) {
  const decimals = Math.max(0, ...rows.slice(0, MAX_TABLE_ROWS).map((row) => {
    const value = row[column];
    if (typeof value !== "number" || Number.isInteger(value)) return 0;
    return Math.min(2, (String(value).split(".")[1] || "").length);
  }));
  return new Intl.NumberFormat(undefined, { minimumFractionDigits: decimals, maximumFractionDigits: Math.max(decimals, 2) });
}

function cell(column, value, format) {
  if (value == null) return el("td", { class: "null" }, "");
  if (typeof value === "number") {
    const text = NO_GROUPING.test(column) ? String(value) : format.format(value);
    return el("td", { class: "num", title: String(value) }, text);
  }
  if (typeof value === "object") return el("td", {}, JSON.stringify(value));
  return el("td", {}, String(value));
}

// --- rendering -----------------------------------------------------------------------------
function table(rows) {
  if (!Array.isArray(rows) || !rows.length || typeof rows[0] !== "object" || rows[0] === null) return null;
  const columns = Object.keys(rows[0]);
  const head = el("tr", {}, ...columns.map((c) => el("th", { scope: "col" }, c)));
  const formats = Object.fromEntries(columns.map((c) => [c, columnFormat(rows, c)]));
  const body = rows.slice(0, MAX_TABLE_ROWS).map((row) => el("tr", {}, ...columns.map((c) => cell(c, row[c], formats[c]))));
  const count = rows.length > MAX_TABLE_ROWS ? `showing ${MAX_TABLE_ROWS} of ${rows.length} rows` : `${rows.length} row${rows.length === 1 ? "" : "s"}`;
  return el("div", { class: "dataset-table" },
    el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body))),
    el("div", { class: "caption" }, count));
}

function chartTitle(spec) {
  const title = spec.title;
  if (typeof title === "string") return title;
  if (title && typeof title.text === "string") return title.text;
  return "chart";
}

async function chart(spec) {
  if (!spec || typeof spec !== "object" || !Object.keys(spec).length) return null;
  const holder = el("figure", { class: "chart" });
  try {
    const svg = await (await api("/v1/charts/render", { method: "POST", body: JSON.stringify({ spec }) })).text();
    const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
    holder.append(el("img", { src: url, alt: chartTitle(spec) }));
  } catch (err) {
    holder.append(el("div", { class: "meta" }, "Chart unavailable: " + err.message));
  }
  return holder;
}

function tabs(data, charts = {}) {
  // synthesis: one tab per agent (seed 000's frontend contract), each with its own chart
  const names = Object.keys(data);
  const bar = el("div", { class: "tabs", role: "tablist" });
  const panes = el("div", { class: "panes" });
  const select = (name) => {
    for (const tab of bar.children) { const on = tab.dataset.agent === name; tab.classList.toggle("active", on); tab.setAttribute("aria-selected", String(on)); tab.tabIndex = on ? 0 : -1; }
    for (const pane of panes.children) pane.hidden = pane.dataset.agent !== name;
  };
  names.forEach((name, i) => {
    const id = `pane-${Math.random().toString(36).slice(2)}`;
    const value = data[name];
    const pane = el("div", { class: "pane", role: "tabpanel", id, "data-agent": name },
      table(Array.isArray(value) ? value : null) || el("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2)));
    if (charts[name]) chart(charts[name]).then((picture) => { if (picture) pane.prepend(picture); });
    bar.append(el("button", { class: "tab", role: "tab", type: "button", "data-agent": name, "aria-controls": id, onclick: () => select(name),
      onkeydown: (event) => {
        const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
        if (!step) return;
        const next = names[(names.indexOf(name) + step + names.length) % names.length];
        select(next);
        bar.querySelector(`[data-agent="${CSS.escape(next)}"]`).focus();
      } }, name));
    panes.append(pane);
  });
  if (names.length) select(names[0]);
  return el("div", { class: "synthesis" }, bar, panes);
}

async function dataView(answer) {
  const data = plain(answer.data);
  if (data == null) return null;
  if (Array.isArray(data)) {
    const box = el("div", { class: "dataset" });
    const picture = await chart(answer.viz_config);
    if (picture) box.append(picture);
    const rows = table(data);
    if (rows) box.append(rows);
    return box.children.length ? box : null;
  }
  if (typeof data === "object") return tabs(data, answer.metadata?.charts || {});
  return el("pre", { class: "dataset" }, String(data));
}

function sourcesView(answer) {
  const sources = [...(answer.source_documents || []), ...(answer.knowledge_sources || [])];
  if (!sources.length) return null;
  const seen = new Set();
  const items = sources.filter((s) => { const key = s.source + "#" + (s.chunk_id || ""); if (seen.has(key)) return false; seen.add(key); return true; });
  return el("details", { class: "sources" }, el("summary", {}, `Sources (${items.length})`),
    el("ol", {}, ...items.map((s) => el("li", {}, el("strong", {}, s.source), s.content ? el("div", { class: "snippet" }, s.content.slice(0, 400)) : null))));
}

function insightsView(answer) {
  if (!answer.insights?.length) return null;
  return el("div", { class: "insights" }, ...answer.insights.map((insight) => {
    const row = el("div", { class: "insight" }, el("span", {}, insight.text || insight.title || insight.kind));
    const dismiss = el("button", { class: "secondary small", type: "button", onclick: async () => {
      row.hidden = true; // the user's intent first; restored with the reason if the server refuses
      try {
        await api("/v1/insights/dismiss", { method: "POST", body: JSON.stringify({ insight_id: insight.id, turn_id: answer.turn_id }) });
        row.remove();
      } catch (err) {
        row.hidden = false;
        dismiss.replaceWith(el("span", { class: "meta" }, "Could not dismiss: " + err.message));
      }
    } }, "Dismiss");
    row.append(dismiss);
    return row;
  }));
}

function followupsView(answer) {
  if (!answer.suggested_followups?.length) return null;
  return el("div", { class: "chips", "aria-label": "Suggested follow-ups" }, ...answer.suggested_followups.map((text) =>
    el("button", { class: "chip", type: "button", onclick: () => ask(text) }, text)));
}

function feedbackView(answer) {
  const box = el("div", { class: "feedback" }, el("span", {}, "Was this right?"));
  const send = async (body, label) => {
    box.querySelectorAll("button").forEach((b) => (b.disabled = true));
    try {
      await api("/v1/feedback", { method: "POST", body: JSON.stringify({ turn_id: answer.turn_id, ...body }) });
      box.replaceChildren(el("span", { class: "thanks" }, "Thanks, recorded: " + label));
    } catch (err) {
      box.querySelectorAll("button").forEach((b) => (b.disabled = false));
      box.querySelector(".problem")?.remove();
      box.append(el("span", { class: "problem" }, "Not recorded: " + err.message));
    }
  };
  box.append(
    el("button", { class: "icon", type: "button", title: "Thumbs up", "aria-label": "Thumbs up", onclick: () => send({ thumbs: "up" }, "helpful") }, icon("up")),
    el("button", { class: "icon", type: "button", title: "Thumbs down", "aria-label": "Thumbs down", onclick: () => send({ thumbs: "down" }, "not helpful") }, icon("down")));
  if (answer.data != null) {
    box.append(el("span", { class: "sep" }, "Data:"));
    for (const verdict of ["confirmed", "approximate", "rejected"])
      box.append(el("button", { class: "secondary small", type: "button", onclick: () => send({ verdict }, verdict) }, verdict));
  }
  return box;
}

function checkpointView(answer) {
  if (answer.response_type !== "stage_checkpoint") return null;
  const stage = answer.metadata?.pipeline?.checkpoint_stage ?? answer.metadata?.stage_id;
  const box = el("div", { class: "checkpoint" }, el("div", { class: "title" }, stage ? `The pipeline paused after stage “${stage}” for your review.` : "The pipeline paused for your review."));
  const edit = el("input", { type: "text", placeholder: "Edit the next stage's question", "aria-label": "Edited question", hidden: true });
  const status = el("div", { class: "meta" });
  const buttons = () => box.querySelectorAll("button");
  const decide = async (action) => {
    if (action === "edit" && edit.hidden) { edit.hidden = false; edit.focus(); return; }
    if (action === "edit" && !edit.value.trim()) { status.textContent = "Type the edited question first."; return; }
    const body = { action };
    if (action === "edit") body.question = edit.value.trim();
    if (state.sessionId) body.session_id = state.sessionId; // the decision and its outcome join the conversation
    if (stage) body.stage_id = stage; // answers this checkpoint only: a repeated click can't approve the next one
    buttons().forEach((b) => (b.disabled = true));
    status.textContent = "Sending…";
    try {
      const reply = await (await api(`/v1/pipelines/${encodeURIComponent(answer.workflow_id)}/decision`, { method: "POST", body: JSON.stringify(body) })).json();
      status.textContent = { approve: "Approved.", edit: "Edited and continued.", reject: "Rejected." }[action];
      edit.disabled = true;
      box.closest(".turn").append(await answerView(reply));
      loadSessions().catch(() => {});
    } catch (err) {
      status.textContent = "Decision not sent: " + err.message;
      buttons().forEach((b) => (b.disabled = false));
    }
  };
  box.append(edit, el("div", { class: "actions" },
    el("button", { type: "button", onclick: () => decide("approve") }, "Approve"),
    el("button", { class: "secondary", type: "button", onclick: () => decide("edit") }, "Edit"),
    el("button", { class: "secondary danger", type: "button", onclick: () => decide("reject") }, "Reject")), status);
  return box;
}

function metaView(answer) {
  const m = answer.metadata || {};
  const parts = [
    m.routed_to && "answered by " + m.routed_to,
    m.agents_consulted?.length && "consulted " + m.agents_consulted.join(", "),
    m.fast_path || m.llm_calls === 0 ? "no LLM call" : null,
    m.partial && "partial answer",
    answer.staleness_warning,
  ].filter(Boolean);
  return parts.length ? el("div", { class: "meta" }, parts.join(" · ")) : null;
}

async function answerView(answer) {
  const box = el("div", { class: "answer" + (answer.error ? " error" : ""), "data-mode": answer.metadata?.mode || "", "data-turn": answer.turn_id });
  box.append(el("div", { class: "text" }, answer.content || answer.error || ""));
  const data = await dataView(answer);
  if (data) box.append(data);
  if (answer.query) box.append(el("details", { class: "sql" }, el("summary", {}, "SQL"), el("pre", {}, answer.query)));
  for (const part of [sourcesView(answer), insightsView(answer), checkpointView(answer), followupsView(answer), feedbackView(answer), metaView(answer)])
    if (part) box.append(part);
  return box;
}

// --- asking, with live events --------------------------------------------------------------
function describe(event) {
  const d = event.data || {};
  switch (event.type) {
    case "agent.routed": return `routed to ${d.agent}`;
    case "agent.start": return `→ ${d.agent} is working on it`;
    case "agent.end": return `✓ ${d.agent} ${d.status}${d.duration_ms != null ? ` (${Math.round(d.duration_ms)} ms)` : ""}`;
    case "agent.retry": return `↻ ${d.agent} retrying (${d.reason ?? d.error_type ?? ""})`;
    case "llm.start": return "… thinking";
    case "llm.error": return `model error: ${d.error_type ?? ""}`;
    case "sql.attempt": return `SQL attempt ${d.attempt ?? ""}: ${d.outcome ?? ""}${d.row_count != null ? ` (${d.row_count} rows)` : ""}${d.error_class ? ` — ${d.error_class}` : ""}`;
    case "stage.start": return `stage ${d.stage_id} started`;
    case "stage.end": return `stage ${d.stage_id} ${d.status ?? "done"}`;
    case "stage.failed": return `stage ${d.stage_id} failed: ${d.reason ?? ""}`;
    case "stage.checkpoint": return `paused after stage ${d.stage_id ?? ""} for review`;
    case "pipeline.complete": return `pipeline ${d.status ?? "complete"}`;
    default: return null;
  }
}

function parseBlock(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return { name, data: data.length ? JSON.parse(data.join("\n")) : null };
}

async function ask(question) {
  if (state.busy || !question.trim()) return;
  state.busy = true;
  $("#ask-button").disabled = true;
  $("#empty").hidden = true;
  const events = el("ol", { class: "events", "aria-label": "Progress" });
  const draft = el("div", { class: "draft", hidden: true });
  const turn = el("div", { class: "turn" }, el("div", { class: "question" }, question), events, draft);
  $("#chat").append(turn);
  turn.scrollIntoView({ block: "end" });
  let answered = false;
  try {
    const response = await api("/v1/ask/stream", { method: "POST", body: JSON.stringify({ question, session_id: state.sessionId }) });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const { name, data } = parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (name === "answer") {
          answered = true;
          state.sessionId = data.session_id;
          draft.remove();
          turn.append(await answerView(data));
          loadSessions().catch(() => {});
        } else if (name === "error") {
          turn.append(el("div", { class: "answer error" }, el("div", { class: "text" }, `The request failed (${data.error}): ${data.detail}`)));
        } else if (name === "llm.token") {
          draft.hidden = false;
          draft.textContent += data.data?.delta ?? "";
        } else {
          const text = describe(data);
          if (text) { events.append(el("li", { "data-type": name }, text)); events.scrollTop = events.scrollHeight; }
        }
      }
    }
    if (!answered && !turn.querySelector(".answer")) turn.append(el("div", { class: "answer error" }, el("div", { class: "text" }, "The stream ended without an answer.")));
  } catch (err) {
    turn.append(el("div", { class: "answer error" }, el("div", { class: "text" }, err.message)));
  } finally {
    if (events.children.length) {
      // keep the steps, folded: the answer is what matters now
      const steps = el("details", { class: "steps" }, el("summary", {}, `${events.children.length} step${events.children.length === 1 ? "" : "s"}`));
      events.replaceWith(steps);
      steps.append(events);
    } else events.remove();
    state.busy = false;
    $("#ask-button").disabled = false;
    turn.scrollIntoView({ block: "end" });
  }
}

// --- sessions and agents -------------------------------------------------------------------
async function loadSessions() {
  const { sessions } = await (await api("/v1/sessions")).json();
  $("#sessions").replaceChildren(...sessions.map((s) => el("li", {},
    el("button", { type: "button", class: "session" + (s.session_id === state.sessionId ? " active" : ""), "data-session": s.session_id,
      "aria-current": s.session_id === state.sessionId ? "true" : null, title: `${s.turns} turn${s.turns === 1 ? "" : "s"}`,
      onclick: () => openSession(s.session_id) }, s.title))));
  $("#no-sessions").hidden = sessions.length > 0;
}

async function openSession(sessionId) {
  if (state.busy) return;
  const { turns } = await (await api(`/v1/sessions/${encodeURIComponent(sessionId)}`)).json();
  state.sessionId = sessionId;
  const chat = $("#chat");
  chat.replaceChildren();
  for (const t of turns) chat.append(el("div", { class: "turn" }, el("div", { class: "question" }, t.question), await answerView(t.answer)));
  $("#empty").hidden = turns.length > 0;
  chat.lastElementChild?.scrollIntoView({ block: "end" });
  await loadSessions();
}

async function loadAgents() {
  const { workspace, agents } = await (await api("/v1/agents")).json();
  $("#workspace").textContent = workspace;
  $("#agents").replaceChildren(...agents.map((a) => el("li", { title: a.description }, a.name)));
  $("#login").hidden = true;
  $("#ask-form").hidden = false;
  $("#empty").hidden = $("#chat").children.length > 0;
}

function showLogin() {
  $("#login").hidden = false;
  $("#ask-form").hidden = true;
  $("#empty").hidden = true;
}

$("#ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const question = $("#question").value;
  if (state.busy || !question.trim()) return;
  $("#question").value = "";
  ask(question);
});
$("#new-session").addEventListener("click", () => {
  if (state.busy) return;
  state.sessionId = null;
  $("#chat").replaceChildren();
  $("#empty").hidden = false;
  loadSessions().catch(() => {});
  $("#question").focus();
});
async function login(key) {
  // The key travels in the request body only; the cookie it buys is httponly.
  const response = await fetch("/login", { method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key }) });
  if (!response.ok) throw new Error(response.status === 401 ? "That key is not valid." : response.statusText);
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await login($("#login-key").value);
    await loadAgents();
    await loadSessions();
  } catch (err) { $("#login-error").textContent = err.message; }
});

// A link like /#key=... (what `baton demo` prints) logs in at once; the fragment is never
// sent to the server, and it is removed from the address bar and history right away.
const fragmentKey = new URLSearchParams(window.location.hash.slice(1)).get("key");
if (fragmentKey) history.replaceState(null, "", window.location.pathname);
(fragmentKey ? login(fragmentKey) : Promise.resolve())
  .catch((err) => { $("#login-error").textContent = err.message; })
  .then(loadAgents).then(loadSessions).catch(() => {});
