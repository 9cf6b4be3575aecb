// One answer in the page: its text (Markdown, rendered safely), chart, table, SQL (editable),
// sources (each once), insights, "Did you mean" suggestions, follow-ups, checkpoint, feedback.
"use strict";

const MAX_TABLE_ROWS = 500;
const NO_GROUPING = /(year|^yr$|(^|_)id$|code|zip|postal)/i; // 2024 is a year, not "2,024"

// Numbers by formatNumber (util.js): amounts read 979,717.40 beside 752,670.22, a ratio of
// 0.0012 reads 0.0012, never 0.00; the exact value is the cell's title.
function cell(column, value) {
  if (value == null) return el("td", { class: "null" }, "");
  if (typeof value === "number") return el("td", { class: "num", title: String(value) }, formatNumber(value, !NO_GROUPING.test(column)));
  if (typeof value === "object") return el("td", {}, JSON.stringify(value));
  return el("td", {}, String(value));
}

// Values compared as they are: numbers as numbers (9 before 10), text by the reader's
// collation with numbers inside it ("item 2" before "item 10"), empty cells last.
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
function compareValues(a, b) {
  if (a == null || b == null) return a == null ? (b == null ? 0 : 1) : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return collator.compare(typeof a === "object" ? JSON.stringify(a) : String(a), typeof b === "object" ? JSON.stringify(b) : String(b));
}

// A result table; a click on a column's header sorts by it (again: the other way), on a copy:
// the answer's own order comes back on the third click.
function table(rows, download) {
  if (!Array.isArray(rows) || !rows.length || typeof rows[0] !== "object" || rows[0] === null) return null;
  const columns = Object.keys(rows[0]);
  const tbody = el("tbody", {});
  const fill = (ordered) => tbody.replaceChildren(...ordered.slice(0, MAX_TABLE_ROWS).map((row) => el("tr", {}, ...columns.map((c) => cell(c, row[c])))));
  const heads = columns.map((c) => el("th", { scope: "col", "aria-sort": "none" },
    el("button", { type: "button", class: "sort", title: `Sort by ${c}`, onclick: () => sortBy(c) }, c)));
  let sorted = { column: null, way: "none" };
  const sortBy = (column) => {
    const way = sorted.column !== column || sorted.way === "none" ? "ascending" : sorted.way === "ascending" ? "descending" : "none";
    sorted = { column, way };
    const sign = way === "descending" ? -1 : 1;
    const nulls = (a, b) => (a == null) - (b == null); // empty cells last, either way
    fill(way === "none" ? rows : [...rows].sort((a, b) => nulls(a[column], b[column]) || sign * compareValues(a[column], b[column])));
    columns.forEach((c, i) => heads[i].setAttribute("aria-sort", c === column ? way : "none"));
  };
  fill(rows);
  const count = rows.length > MAX_TABLE_ROWS ? `showing ${formatNumber(MAX_TABLE_ROWS)} of ${plural(rows.length, "row")}` : plural(rows.length, "row");
  return el("div", { class: "dataset-table" },
    el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, el("tr", {}, ...heads)), tbody)),
    el("div", { class: "caption" }, count, download || null));
}

function tabs(data, charts = {}, answer = {}) {
  // synthesis: one tab per agent (seed 000's frontend contract), each with its own chart
  const names = Object.keys(data);
  const bar = el("div", { class: "tabs", role: "tablist" });
  const panes = el("div", { class: "panes" });
  const select = (name) => {
    for (const tab of bar.children) { const on = tab.dataset.agent === name; tab.classList.toggle("active", on); tab.setAttribute("aria-selected", String(on)); tab.tabIndex = on ? 0 : -1; }
    for (const pane of panes.children) pane.hidden = pane.dataset.agent !== name;
  };
  names.forEach((name) => {
    const id = `pane-${Math.random().toString(36).slice(2)}`;
    const value = data[name];
    const pane = el("div", { class: "pane", role: "tabpanel", id, "data-agent": name },
      table(Array.isArray(value) ? value : null, csvLink(answer, name)) || el("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2)));
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
    const rows = table(data, csvLink(answer));
    if (rows) box.append(rows);
    return box.children.length ? box : null;
  }
  if (typeof data === "object") return tabs(data, answer.metadata?.charts || {}, answer);
  return el("pre", { class: "dataset" }, String(data));
}

// Each source once (a document cited through several passages is one source), with the
// sections that were cited.
function sourcesView(answer) {
  const all = answer.source_documents || [];
  if (!all.length) return null;
  const bySource = new Map();
  for (const s of all) {
    const entry = bySource.get(s.source) || { source: s.source, sections: new Set(), cites: new Set() };
    for (const section of s.metadata?.sections || []) entry.sections.add(String(section));
    if (s.metadata?.citation != null) entry.cites.add(String(s.metadata.citation));
    bySource.set(s.source, entry);
  }
  const items = [...bySource.values()];
  return el("details", { class: "sources" }, el("summary", {}, `Sources (${items.length})`),
    el("ol", {}, ...items.map((s) => el("li", {}, el("strong", {}, s.source),
      s.cites.size ? el("span", { class: "cite" }, " [" + [...s.cites].join("] [") + "]") : null,
      s.sections.size ? el("div", { class: "snippet" }, [...s.sections].join(" · ")) : null))));
}

function insightsView(answer) {
  if (!answer.insights?.length) return null;
  return el("div", { class: "insights" }, ...answer.insights.map((insight) => {
    const row = el("div", { class: "insight", title: insight.tooltip || null }, el("span", {}, insight.text || insight.title || insight.kind));
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

function didYouMean(answer) {
  return (answer.metadata?.did_you_mean || []).map((d) => String(d.question || "")).filter(Boolean);
}

function followupsView(answer) {
  const suggested = didYouMean(answer);
  const chips = (answer.suggested_followups || []).filter((text) => !suggested.includes(text));
  if (!chips.length) return null;
  return el("div", { class: "chips", "aria-label": "Suggested follow-ups" }, ...chips.map((text) =>
    el("button", { class: "chip", type: "button", onclick: () => ask(text) }, text)));
}

function feedbackView(answer) {
  if (isRefusal(answer) || !answer.turn_id) return null;
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
    m.fast_path === "verified_question" && "verified question",
    m.fast_path === "edited_sql" && "your edited SQL",
    m.fast_path === "semantic_layer" && "semantic model",
    m.fast_path || m.llm_calls === 0 ? "no LLM call" : null,
    m.partial && "partial answer",
    answer.error_code && !isNoModelAnswer(answer) && "error: " + answer.error_code,
    answer.staleness_warning,
  ].filter(Boolean);
  return parts.length ? el("div", { class: "meta" }, parts.join(" · ")) : null;
}

async function answerView(answer) {
  const failed = isFailure(answer);
  const box = el("div", { class: "answer" + (failed ? " error" : isRefusal(answer) ? " info" : ""), "data-mode": answer.metadata?.mode || "",
    "data-turn": answer.turn_id, role: failed ? "alert" : null });
  const actions = Object.fromEntries(didYouMean(answer).map((q) => [q, () => ask(q)]));
  box.append(el("div", { class: "text" }, renderMarkdown(answer.content || answer.error || "", { actions })));
  if (answer.error && answer.content && !answer.content.includes(answer.error)) box.append(el("div", { class: "reason" }, answer.error));
  const data = await dataView(answer);
  if (data) box.append(data);
  for (const part of [sqlView(answer), sourcesView(answer), insightsView(answer), checkpointView(answer), followupsView(answer),
    verifyView(answer), feedbackView(answer), metaView(answer)])
    if (part) box.append(part);
  return box;
}
