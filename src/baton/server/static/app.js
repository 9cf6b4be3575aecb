// Baton's page: asking with live events, conversations, login and logout. Loaded last, after
// util.js, markdown.js, charts.js, answer.js and analyst.js (no build step, no CDN).
"use strict";

// --- asking, with live events --------------------------------------------------------------
// The routers that stand in for a model (a verified-question match, keyword routing) emit the
// same llm.start/llm.end events as a model: their step says no model was called, and no
// "thinking" line is shown for them.
const NO_MODEL_PROVIDERS = {
  verified: "matched a verified question, no LLM call",
  lexical: "routed by keywords, no LLM call",
};

function describe(event) {
  const d = event.data || {};
  switch (event.type) {
    case "agent.routed": return `routed to ${d.agent}`;
    case "agent.start": return `→ ${d.agent} is working on it`;
    case "agent.end": {
      const took = d.duration_ms != null ? ` (${formatNumber(Math.round(d.duration_ms))} ms)` : "";
      return d.status === "success" ? `✓ ${d.agent} ${d.status}${took}` : `✗ ${d.agent} ${d.status ?? "failed"}${d.error_type ? `: ${d.error_type}` : ""}${took}`;
    }
    case "agent.retry": return `↻ ${d.agent} retrying (${d.reason ?? d.error_type ?? ""})`;
    case "llm.end": return NO_MODEL_PROVIDERS[d.provider]
      ?? `✓ the model replied (${d.model || d.provider}${d.duration_ms != null ? `, ${formatNumber(Math.round(d.duration_ms))} ms` : ""})`;
    case "llm.error": return `model error: ${d.error_type ?? ""}`;
    case "sql.attempt": return `SQL attempt ${d.attempt ?? ""}: ${d.outcome ?? ""}${d.row_count != null ? ` (${plural(d.row_count, "row")})` : ""}${d.error_class ? ` — ${d.error_class}` : ""}`;
    case "knowledge.retrieval": return `searched the documents: ${plural(d.hits ?? 0, "passage")} found`;
    case "followup": return `follow-up: ${d.kind ?? ""}`;
    case "stage.start": return `stage ${d.stage_id} started`;
    case "stage.end": return `stage ${d.stage_id} ${d.status ?? "done"}`;
    case "stage.failed": return `stage ${d.stage_id} failed: ${d.reason ?? ""}`;
    case "stage.checkpoint": return `paused after stage ${d.stage_id ?? ""} for review`;
    case "pipeline.complete": return `pipeline ${d.status ?? "complete"}`;
    default: return null;
  }
}

// What happened, said once the answer is in: "answered from the semantic model, no LLM call".
function outcome(answer) {
  const m = answer.metadata || {};
  const none = ", no LLM call";
  if (isFailure(answer)) return null;
  if (m.fast_path === "semantic_layer") return "answered from the semantic model" + none;
  if (m.fast_path === "verified_question") return "answered from a verified question" + none;
  if (m.fast_path === "edited_sql") return "ran your edited SQL" + none;
  if (m.fast_path) return `answered without a model (${m.fast_path})`;
  if (m.followup && m.llm_calls === 0) return "answered as an edit of the previous answer" + none;
  if (m.llm_calls === 0) return (answer.source_documents?.length ? "answered from the documents" : "answered") + none;
  if (m.llm_calls > 0) return `answered with ${plural(m.llm_calls, "LLM call")}`;
  return null;
}

// A model's step is shown only when the model is really being waited for: an llm.start is
// held until its llm.end says who answered (a stand-in router answers at once), and said as
// "waiting for the model" only if nothing has come back after a moment.
const MODEL_WAIT_MS = 400;

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
  $("#ask-button").textContent = "Asking…";
  $("#empty").hidden = true;
  const events = el("ol", { class: "events", "aria-label": "Progress" });
  const draft = el("div", { class: "draft", hidden: true });
  const status = el("span", { class: "label" }, "Working on it…");
  const loading = el("div", { class: "loading", role: "status" }, el("span", { class: "spinner", "aria-hidden": "true" }), status);
  const turn = el("div", { class: "turn", "aria-busy": "true" }, el("div", { class: "question" }, question), events, loading, draft);
  const waiting = new Map(); // iteration -> the held llm.start step
  const step = (name, data, text) => {
    const item = el("li", { "data-type": name, class: failed(data) ? "failed" : null }, text);
    events.append(item);
    events.scrollTop = events.scrollHeight;
    status.textContent = text;
    return item;
  };
  $("#chat").append(turn);
  turn.scrollIntoView({ block: "end" });
  let answered = false;
  let reply = null;
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
          reply = data;
          draft.remove();
          turn.append(await answerView(data));
          loadSessions().catch(() => {});
        } else if (name === "error") {
          turn.append(errorBox(`The request failed (${data.error}): ${data.detail}`, data.error));
        } else if (name === "llm.token") {
          draft.hidden = false;
          draft.textContent += data.data?.delta ?? "";
        } else if (name === "llm.start") {
          const held = step(name, data, "… waiting for the model");
          held.hidden = true;
          held.dataset.timer = String(setTimeout(() => { if (waiting.get(data.data?.iteration) === held) held.hidden = false; }, MODEL_WAIT_MS));
          waiting.set(data.data?.iteration, held);
          status.textContent = "Working on it…";
        } else {
          const text = describe(data);
          const held = name === "llm.end" || name === "llm.error" ? waiting.get(data.data?.iteration) : null;
          if (held) {
            waiting.delete(data.data?.iteration);
            clearTimeout(Number(held.dataset.timer));
            held.textContent = text;
            held.hidden = false;
            held.className = failed(data) ? "failed" : "";
            delete held.dataset.timer;
            status.textContent = text;
          } else if (text) step(name, data, text);
        }
      }
    }
    if (!answered && !turn.querySelector(".answer")) turn.append(errorBox("The stream ended without an answer."));
  } catch (err) {
    turn.append(errorBox(err.message, err.code));
  } finally {
    loading.remove();
    turn.removeAttribute("aria-busy");
    for (const held of waiting.values()) held.remove(); // a model call that never ended says nothing
    const said = reply && outcome(reply);
    if (said) events.append(el("li", { "data-type": "outcome", class: "outcome" }, said));
    if (events.children.length) {
      // keep the steps, folded: the answer is what matters now
      const steps = el("details", { class: "steps" }, el("summary", {}, plural(events.children.length, "step")));
      events.replaceWith(steps);
      steps.append(events);
    } else events.remove();
    state.busy = false;
    $("#ask-button").disabled = false;
    $("#ask-button").textContent = "Ask";
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
  closeMenu();
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
  forgetWorkspace();
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
  closeMenu();
  state.sessionId = null;
  $("#chat").replaceChildren();
  $("#empty").hidden = false;
  loadSessions().catch(() => {});
  $("#question").focus();
});
$("#menu-button").addEventListener("click", () => (document.body.classList.contains("menu-open") ? closeMenu() : openMenu()));
$("#schema-button").addEventListener("click", () => { if (!$("#schema").hidden) return closeSchema(); closeMenu(); return openSchema(); });
$("#schema-close").addEventListener("click", closeSchema);
$("#schema-filter").addEventListener("input", filterSchema);

// --- the sidebar: always shown on a wide screen, a menu opened on demand on a phone -------
function openMenu() {
  document.body.classList.add("menu-open");
  $("#menu-button").setAttribute("aria-expanded", "true");
}

function closeMenu() {
  document.body.classList.remove("menu-open");
  $("#menu-button").setAttribute("aria-expanded", "false");
}

// Everything the page holds about a workspace goes when its session does (logout, or a 401):
// the next key may open another workspace, which must not see this one's tables or examples.
function forgetWorkspace() {
  state.sessionId = null;
  state.unanswered = null;
  $("#chat").replaceChildren();
  $("#sessions").replaceChildren();
  $("#no-sessions").hidden = true;
  $("#agents").replaceChildren();
  $("#workspace").textContent = "";
  $("#question").value = "";
  forgetAnalystViews();
  closeMenu();
}

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
