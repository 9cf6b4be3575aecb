// Baton's page: asking with live events, conversations, login and logout. Loaded last, after
// util.js, markdown.js, charts.js, answer.js and analyst.js (no build step, no CDN).
"use strict";

// --- asking, with live events --------------------------------------------------------------
function describe(event) {
  const d = event.data || {};
  switch (event.type) {
    case "agent.routed": return `routed to ${d.agent}`;
    case "agent.start": return `→ ${d.agent} is working on it`;
    case "agent.end": {
      const took = d.duration_ms != null ? ` (${Math.round(d.duration_ms)} ms)` : "";
      return d.status === "success" ? `✓ ${d.agent} ${d.status}${took}` : `✗ ${d.agent} ${d.status ?? "failed"}${d.error_type ? `: ${d.error_type}` : ""}${took}`;
    }
    case "agent.retry": return `↻ ${d.agent} retrying (${d.reason ?? d.error_type ?? ""})`;
    case "llm.start": return "… thinking";
    case "llm.error": return `model error: ${d.error_type ?? ""}`;
    case "sql.attempt": return `SQL attempt ${d.attempt ?? ""}: ${d.outcome ?? ""}${d.row_count != null ? ` (${d.row_count} rows)` : ""}${d.error_class ? ` — ${d.error_class}` : ""}`;
    case "followup": return `follow-up: ${d.kind ?? ""}`;
    case "stage.start": return `stage ${d.stage_id} started`;
    case "stage.end": return `stage ${d.stage_id} ${d.status ?? "done"}`;
    case "stage.failed": return `stage ${d.stage_id} failed: ${d.reason ?? ""}`;
    case "stage.checkpoint": return `paused after stage ${d.stage_id ?? ""} for review`;
    case "pipeline.complete": return `pipeline ${d.status ?? "complete"}`;
    default: return null;
  }
}

function failed(event) {
  const d = event.data || {};
  return (event.type === "agent.end" && d.status !== "success") || event.type === "stage.failed" || event.type === "llm.error";
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

function errorBox(message, code) {
  return el("div", { class: "answer error", role: "alert", "data-code": code || null }, el("div", { class: "text" }, message));
}

// One idempotency key per question; asking the same question again after a failure reuses
// it, so a turn stored despite the failure is not stored twice (the server returns it).
function turnKey(question) {
  const last = state.unanswered;
  if (!last || last.question !== question || last.sessionId !== state.sessionId) {
    const hex = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
    state.unanswered = { question, sessionId: state.sessionId, key: crypto.randomUUID ? crypto.randomUUID() : hex() };
  }
  return state.unanswered.key;
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
    const body = { question, session_id: state.sessionId, turn_id: turnKey(question) };
    const response = await api("/v1/ask/stream", { method: "POST", body: JSON.stringify(body) });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      let chunk;
      try { chunk = await reader.read(); } catch { throw new ApiError(SERVER_DOWN, 0, "server_unreachable"); }
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const { name, data } = parseBlock(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (name === "answer") {
          answered = true;
          state.unanswered = null;
          state.sessionId = data.session_id;
          draft.remove();
          turn.append(await answerView(data));
          loadSessions().catch(() => {});
        } else if (name === "error") {
          turn.append(errorBox(`The request failed (${data.error}): ${data.detail}`, data.error));
        } else if (name === "llm.token") {
          draft.hidden = false;
          draft.textContent += data.data?.delta ?? "";
        } else {
          const text = describe(data);
          if (text) {
            events.append(el("li", { "data-type": name, class: failed(data) ? "failed" : null }, text));
            events.scrollTop = events.scrollHeight;
          }
        }
      }
    }
    if (!answered && !turn.querySelector(".answer")) turn.append(errorBox("The stream ended without an answer."));
  } catch (err) {
    turn.append(errorBox(err.message, err.code));
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
  $("#account").hidden = false;
  $("#empty").hidden = $("#chat").children.length > 0;
  loadExamples().catch((err) => $("#examples").replaceChildren(el("p", { class: "error" }, "Examples unavailable: " + err.message)));
}

function showLogin() {
  $("#login").hidden = false;
  $("#ask-form").hidden = true;
  $("#empty").hidden = true;
  $("#account").hidden = true;
  closeSchema();
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
$("#schema-button").addEventListener("click", () => ($("#schema").hidden ? openSchema() : closeSchema()));
$("#schema-close").addEventListener("click", closeSchema);
$("#schema-filter").addEventListener("input", filterSchema);

// --- login and logout ------------------------------------------------------------------------
async function login(key) {
  // The key travels in the request body only; the cookie it buys holds a session token
  // (never the key), is HttpOnly, and is sent to this server only.
  const response = await request("/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key }) });
  if (!response.ok) throw new Error(response.status === 401 ? "That key is not valid." : response.statusText);
}

async function logout() {
  try {
    await request("/logout", { method: "POST" });
  } finally {
    state.sessionId = null;
    $("#chat").replaceChildren();
    $("#sessions").replaceChildren();
    $("#agents").replaceChildren();
    $("#workspace").textContent = "";
    showLogin();
  }
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await login($("#login-key").value);
    $("#login-key").value = "";
    $("#login-error").textContent = "";
    await loadAgents();
    await loadSessions();
  } catch (err) { $("#login-error").textContent = err.message; }
});
$("#logout").addEventListener("click", () => logout().catch(() => {}));

// A link like /#key=... (what `baton demo` prints) logs in at once; the fragment is never
// sent to the server, and it is removed from the address bar and history right away.
const fragmentKey = new URLSearchParams(window.location.hash.slice(1)).get("key");
if (fragmentKey) history.replaceState(null, "", window.location.pathname);
(fragmentKey ? login(fragmentKey) : Promise.resolve())
  .catch((err) => { $("#login-error").textContent = err.message; })
  .then(loadAgents).then(loadSessions)
  .catch((err) => { if (err.code === "server_unreachable") { showLogin(); $("#login-error").textContent = err.message; } });
