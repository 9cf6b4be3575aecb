// Baton's page: no build step, no CDN. Everything shown comes from the API; text is always
// inserted as text (answers and data are untrusted), charts arrive as server-rendered SVG
// shown through <img>, which cannot run scripts.
"use strict";

const state = { sessionId: null, busy: false };
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "same-origin", ...options,
    headers: { "Content-Type": "application/json", ...(options.headers || {}) } });
  if (response.status === 401) { showLogin(); throw new Error("not logged in"); }
  if (!response.ok) throw new Error((await response.json().catch(() => ({}))).detail || response.statusText);
  return response;
}

// --- values: the API tags dates, decimals and DataFrames ({"$type": ...}) -------------------
function plain(value) {
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object") {
    if (value.$type === "dataframe") return value.rows.map((row) => Object.fromEntries(value.columns.map((c, i) => [c, plain(row[i])])));
    if (value.$type) return value.value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

// --- rendering -----------------------------------------------------------------------------
function table(rows) {
  if (!Array.isArray(rows) || !rows.length || typeof rows[0] !== "object") return null;
  const columns = Object.keys(rows[0]);
  const head = el("tr", {}, ...columns.map((c) => el("th", {}, c)));
  const body = rows.slice(0, 500).map((row) => el("tr", {}, ...columns.map((c) => el("td", {}, row[c] == null ? "" : String(row[c])))));
  return el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
}

async function chart(spec) {
  if (!spec || !Object.keys(spec).length) return null;
  const holder = el("div", { class: "chart" });
  try {
    const svg = await (await api("/v1/charts/render", { method: "POST", body: JSON.stringify({ spec }) })).text();
    const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
    holder.append(el("img", { src: url, alt: spec.title?.text || spec.title || "chart" }));
  } catch (err) { holder.append(el("div", { class: "meta" }, "chart unavailable: " + err.message)); }
  return holder;
}

async function dataView(answer) {
  const data = plain(answer.data);
  if (data == null) return null;
  if (Array.isArray(data)) {
    const box = el("div", { class: "dataset" });
    const c = await chart(answer.viz_config);
    if (c) box.append(c);
    const t = table(data);
    if (t) box.append(t);
    return box;
  }
  // synthesis: one tab per agent (seed 000's frontend contract)
  const names = Object.keys(data);
  const tabs = el("div", { class: "tabs", role: "tablist" });
  const panes = el("div", {});
  names.forEach((name, i) => {
    const pane = el("div", { class: "pane", role: "tabpanel", "data-agent": name });
    pane.hidden = i > 0;
    const t = table(data[name]);
    pane.append(t || el("pre", {}, JSON.stringify(data[name], null, 2)));
    const tab = el("button", { class: "tab" + (i ? "" : " active"), role: "tab", type: "button", onclick: () => {
      tabs.querySelectorAll(".tab").forEach((b) => b.classList.remove("active"));
      panes.querySelectorAll(".pane").forEach((p) => (p.hidden = p.dataset.agent !== name));
      tab.classList.add("active");
    } }, name);
    tabs.append(tab);
    panes.append(pane);
  });
  return el("div", {}, tabs, panes);
}

function insightsView(answer) {
  if (!answer.insights?.length) return null;
  return el("div", { class: "insights" }, ...answer.insights.map((insight) => {
    const row = el("div", { class: "insight" }, el("span", {}, insight.text || insight.title || insight.kind));
    row.append(el("button", { class: "secondary", type: "button", onclick: async () => {
      await api("/v1/insights/dismiss", { method: "POST", body: JSON.stringify({ insight_id: insight.id, turn_id: answer.turn_id }) }).catch(() => {});
      row.remove();
    } }, "Dismiss"));
    return row;
  }));
}

function followupsView(answer) {
  if (!answer.suggested_followups?.length) return null;
  return el("div", { class: "chips" }, ...answer.suggested_followups.map((text) =>
    el("button", { class: "chip", type: "button", onclick: () => ask(text) }, text)));
}

function feedbackView(answer) {
  const box = el("div", { class: "feedback" }, "Was this right?");
  const send = (body, label) => api("/v1/feedback", { method: "POST", body: JSON.stringify({ turn_id: answer.turn_id, ...body }) })
    .then(() => { box.replaceChildren(el("span", {}, "Thanks: " + label)); }).catch((err) => box.append(" " + err.message));
  box.append(
    el("button", { class: "secondary", type: "button", title: "Thumbs up", onclick: () => send({ thumbs: "up" }, "👍") }, "👍"),
    el("button", { class: "secondary", type: "button", title: "Thumbs down", onclick: () => send({ thumbs: "down" }, "👎") }, "👎"));
  if (answer.data != null) for (const verdict of ["confirmed", "approximate", "rejected"])
    box.append(el("button", { class: "secondary", type: "button", onclick: () => send({ verdict }, verdict) }, verdict));
  return box;
}

function checkpointView(answer) {
  if (answer.response_type !== "stage_checkpoint") return null;
  const box = el("div", { class: "checkpoint" }, el("div", {}, "The pipeline paused for your review."));
  const edit = el("input", { type: "text", placeholder: "Edit the next stage's question (optional)" });
  const decide = async (action) => {
    const body = { action };
    if (action === "edit") body.question = edit.value;
    box.querySelectorAll("button").forEach((b) => (b.disabled = true));
    const reply = await (await api(`/v1/pipelines/${answer.workflow_id}/decision`, { method: "POST", body: JSON.stringify(body) })).json();
    box.after(await answerView(reply));
  };
  box.append(edit, el("div", { class: "actions" },
    el("button", { type: "button", onclick: () => decide("approve") }, "Approve"),
    el("button", { class: "secondary", type: "button", onclick: () => decide("edit") }, "Edit"),
    el("button", { class: "secondary", type: "button", onclick: () => decide("reject") }, "Reject")));
  return box;
}

async function answerView(answer) {
  const box = el("div", { class: "answer" + (answer.error ? " error" : ""), "data-mode": answer.metadata?.mode || "" });
  box.append(el("div", { class: "text" }, answer.content || answer.error || ""));
  const data = await dataView(answer);
  if (data) box.append(data);
  if (answer.query) box.append(el("details", { class: "sql" }, el("summary", {}, "SQL"), el("pre", {}, answer.query)));
  for (const part of [insightsView(answer), checkpointView(answer), followupsView(answer), feedbackView(answer)]) if (part) box.append(part);
  const meta = [answer.metadata?.routed_to && "answered by " + answer.metadata.routed_to,
    answer.metadata?.agents_consulted && "consulted " + answer.metadata.agents_consulted.join(", "),
    answer.metadata?.llm_calls === 0 || answer.metadata?.fast_path ? "no LLM call" : null].filter(Boolean).join(" · ");
  if (meta) box.append(el("div", { class: "meta" }, meta));
  return box;
}

// --- asking, with live events --------------------------------------------------------------
function describe(event) {
  const d = event.data || {};
  switch (event.type) {
    case "agent.start": return `→ ${d.agent} is working on it`;
    case "agent.end": return `✓ ${d.agent} ${d.status}`;
    case "llm.start": return "… thinking";
    case "sql.attempt": return `SQL attempt ${d.attempt ?? ""}: ${d.outcome ?? ""}`;
    case "stage.start": return `stage ${d.stage_id} started`;
    case "stage.end": return `stage ${d.stage_id} ${d.status ?? "done"}`;
    default: return null;
  }
}

async function ask(question) {
  if (state.busy || !question.trim()) return;
  state.busy = true;
  $("#ask-button").disabled = true;
  const events = el("ul", { class: "events" });
  const turn = el("div", { class: "turn" }, el("div", { class: "question" }, question), events);
  $("#chat").append(turn);
  turn.scrollIntoView({ block: "end" });
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
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const name = /^event: (.*)$/m.exec(block)?.[1];
        const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] || "null");
        if (name === "answer") {
          state.sessionId = data.session_id;
          turn.append(await answerView(data));
          loadSessions();
        } else if (name === "error") {
          turn.append(el("div", { class: "answer error" }, data.detail));
        } else {
          const text = describe(data);
          if (text) events.append(el("li", { "data-type": name }, text));
        }
      }
    }
  } catch (err) {
    turn.append(el("div", { class: "answer error" }, err.message));
  } finally {
    state.busy = false;
    $("#ask-button").disabled = false;
    turn.scrollIntoView({ block: "end" });
  }
}

// --- sessions and agents -------------------------------------------------------------------
async function loadSessions() {
  const { sessions } = await (await api("/v1/sessions")).json();
  $("#sessions").replaceChildren(...sessions.map((s) => el("li", {
    class: s.session_id === state.sessionId ? "active" : "", "data-session": s.session_id, onclick: () => openSession(s.session_id),
  }, s.title)));
}

async function openSession(sessionId) {
  const { turns } = await (await api(`/v1/sessions/${sessionId}`)).json();
  state.sessionId = sessionId;
  $("#chat").replaceChildren();
  for (const t of turns) $("#chat").append(el("div", { class: "turn" }, el("div", { class: "question" }, t.question), await answerView(t.answer)));
  loadSessions();
}

async function loadAgents() {
  const { agents } = await (await api("/v1/agents")).json();
  $("#agents").replaceChildren(...agents.map((a) => el("li", { title: a.description }, a.name)));
}

function showLogin() { $("#login").hidden = false; }

$("#ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const question = $("#question").value;
  $("#question").value = "";
  ask(question);
});
$("#new-session").addEventListener("click", () => { state.sessionId = null; $("#chat").replaceChildren(); loadSessions(); });
$("#login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  window.location.href = "/login?key=" + encodeURIComponent($("#login-key").value);
});
loadAgents().then(loadSessions).catch(() => {});
