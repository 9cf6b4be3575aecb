// What the page offers an analyst beyond asking: example questions on the empty page, the
// schema browser, editing and re-running an answer's SQL (through the server's safety
// checks), saving an answer as a verified question, and CSV downloads.
"use strict";

// --- the empty page: what can be asked ------------------------------------------------------
async function loadExamples() {
  const box = $("#examples");
  const { verified, documents, metrics = [], no_model: noModel, can_draft_semantic: canDraft } = await (await api("/v1/examples")).json();
  const group = (title, hint, questions, kind) => el("div", { class: "example-group", "data-kind": kind },
    el("h3", {}, title), hint ? el("p", { class: "hint" }, hint) : null,
    el("div", { class: "examples" }, ...questions.map((q) => el("button", { class: "example", type: "button", onclick: () => ask(q) }, q))));
  const parts = [];
  if (metrics.length) parts.push(group("Metrics", "Answered from the semantic model" + (noModel ? ", without a language model." : "."), metrics, "metrics"));
  if (verified.length) parts.push(group("Verified questions", noModel ? "Answered from checked SQL, without a language model. Ask them in your own words too." : "Answered from checked SQL.", verified.map((v) => v.question), "verified"));
  else if (!metrics.length) parts.push(el("p", { class: "hint no-verified" }, "This workspace has no verified questions yet. Answer a question (with a model, or by editing an answer's SQL), then use “Save as verified question”; or run baton verified add."));
  if (documents.length) parts.push(group("From the documents", "Definitions and rules, answered with the passages they come from.", documents, "documents"));
  if (canDraft) parts.push(draftOffer());
  box.replaceChildren(...parts);
}

// --- "Draft a semantic model": what `baton semantic init` writes, for a workspace without one --
function draftOffer() {
  const result = el("div", { class: "draft-result" });
  const button = el("button", { type: "button", class: "draft-semantic" }, "Draft a semantic model");
  button.onclick = async () => {
    button.disabled = true;
    result.replaceChildren(el("p", { class: "hint" }, "Reading the database…"));
    try {
      result.replaceChildren(draftShown(await (await api("/v1/semantic/draft", { method: "POST" })).json()));
    } catch (err) {
      result.replaceChildren(el("p", { class: "error" }, "Drafting failed: " + err.message));
      button.disabled = false;
    }
  };
  return el("div", { class: "example-group", "data-kind": "draft" }, el("h3", {}, "Semantic model"),
    el("p", { class: "hint" }, "Metric questions (revenue by month, how many customers) are answered without a model once the workspace has a semantic model. Draft one from this database's tables and comments."),
    button, result);
}

function draftShown(draft) {
  const file = URL.createObjectURL(new Blob([draft.yaml], { type: "application/yaml" }));
  const list = (items) => el("ul", {}, ...items.map((text) => el("li", {}, text)));
  return el("div", { class: "draft" },
    el("a", { class: "download", href: file, download: draft.filename }, `Download ${draft.filename}`),
    el("p", { class: "hint" }, "Check it, then serve with it:"), el("code", {}, draft.command),
    el("h4", {}, "What the draft decided"), list(draft.decisions),
    el("h4", {}, `What to check (${draft.checklist.length})`),
    draft.checklist.length ? list(draft.checklist.map((item) => `${item.kind}: ${item.target}: ${item.suggestion}`))
      : el("p", { class: "hint" }, "Nothing flagged; still read what it decided."));
}

// --- the schema browser ---------------------------------------------------------------------
function tableEntry(table) {
  const rows = table.rows == null ? "row count unknown" : `about ${plural(table.rows, "row")}`;
  const keys = new Map(table.foreign_keys.flatMap((fk) => fk.columns.map((c, i) => [c, `→ ${fk.ref_table}.${fk.ref_columns[i] ?? ""}`])));
  return el("details", { class: "schema-table", "data-table": table.name },
    el("summary", {}, el("span", { class: "name" }, table.schema ? `${table.schema}.${table.name}` : table.name), el("span", { class: "rows" }, rows)),
    table.description ? el("p", { class: "comment" }, clip(table.description, 300)) : null,
    el("table", { class: "columns" }, el("tbody", {}, ...table.columns.map((c) => el("tr", { "data-column": c.name },
      el("td", { class: "name" }, c.name, c.primary_key ? el("span", { class: "key", title: "primary key" }, " (key)") : null),
      el("td", { class: "type" }, c.type || ""),
      el("td", { class: "ref" }, keys.get(c.name) || ""),
      el("td", { class: "comment" }, clip(c.description || "", 160)))))));
}

// A database comment is anyone's text: shown as text (el sets textContent), flattened and clipped.
function clip(text, limit) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}

async function openSchema() {
  const panel = $("#schema");
  panel.hidden = false;
  $("#schema-button").setAttribute("aria-expanded", "true");
  const list = $("#schema-list");
  if (list.dataset.loaded) { $("#schema-filter").focus(); return; }
  list.replaceChildren(el("p", { class: "hint" }, "Reading the schema…"));
  try {
    const { connections } = await (await api("/v1/schema")).json();
    const parts = connections.map((c) => el("section", { class: "connection" },
      el("h3", {}, `${c.id} (${c.dialect})`),
      c.error ? el("p", { class: "error" }, c.error) : null,
      ...c.tables.map(tableEntry),
      c.tables_left_out ? el("p", { class: "hint" }, `${plural(c.tables_left_out, "more table")} not listed`) : null));
    list.replaceChildren(...(parts.length ? parts : [el("p", { class: "hint" }, "This workspace has no SQL database.")]));
    list.dataset.loaded = "1";
  } catch (err) {
    list.replaceChildren(el("p", { class: "error", role: "alert" }, "Could not read the schema: " + err.message));
  }
  $("#schema-filter").focus();
}

// The schema and examples are read once per login; a logout forgets them (app.js forgetWorkspace).
function forgetAnalystViews() {
  closeSchema();
  const list = $("#schema-list");
  list.replaceChildren();
  delete list.dataset.loaded;
  $("#schema-filter").value = "";
  $("#examples").replaceChildren();
}

function closeSchema() {
  $("#schema").hidden = true;
  $("#schema-button").setAttribute("aria-expanded", "false");
}

function filterSchema() {
  const words = $("#schema-filter").value.trim().toLowerCase();
  for (const entry of document.querySelectorAll("#schema-list .schema-table")) {
    const columns = [...entry.querySelectorAll("tr[data-column]")];
    const comment = entry.querySelector("p.comment");
    const tableHit = entry.dataset.table.toLowerCase().includes(words) || Boolean(comment?.textContent.toLowerCase().includes(words));
    let columnHit = false;
    for (const row of columns) {  // a column is found by its name or its comment ("revenue" finds amount_cents)
      const hit = !words || tableHit || row.dataset.column.toLowerCase().includes(words)
        || row.querySelector("td.comment").textContent.toLowerCase().includes(words);
      row.hidden = !hit;
      columnHit ||= hit;
    }
    entry.hidden = Boolean(words) && !tableHit && !columnHit;
    if (words && !tableHit && columnHit) entry.open = true;
  }
}

// --- CSV --------------------------------------------------------------------------------------
function csvLink(answer, part) {
  if (!answer.turn_id) return null;
  const query = part ? `?part=${encodeURIComponent(part)}` : "";
  return el("a", { class: "download", href: `/v1/turns/${encodeURIComponent(answer.turn_id)}/csv${query}`, download: "" }, "Download CSV");
}

// --- SQL: shown, edited, run again ---------------------------------------------------------
function sqlView(answer) {
  if (!answer.query) return null;
  const code = el("pre", {}, answer.query);
  const box = el("details", { class: "sql" }, el("summary", {}, "SQL"), code);
  if (!answer.turn_id || isRefusal(answer)) return box;
  const problem = el("div", { class: "sql-error", role: "alert" });
  const editor = el("textarea", { class: "sql-editor", "aria-label": "SQL", spellcheck: "false", hidden: true,
    rows: String(Math.min(16, Math.max(3, answer.query.split("\n").length + 1))) });
  const run = el("button", { type: "button", class: "small", hidden: true }, "Run");
  const cancel = el("button", { type: "button", class: "secondary small", hidden: true }, "Cancel");
  const edit = el("button", { type: "button", class: "secondary small" }, "Edit SQL");
  const editing = (on) => {
    editor.hidden = run.hidden = cancel.hidden = !on;
    edit.hidden = code.hidden = on;
    problem.textContent = "";
    delete problem.dataset.code;
  };
  edit.addEventListener("click", () => { editor.value = answer.query; editing(true); editor.focus(); });
  cancel.addEventListener("click", () => editing(false));
  run.addEventListener("click", async () => {
    if (state.busy) return;
    run.disabled = cancel.disabled = true;
    problem.textContent = "";
    try {
      const reply = await (await api("/v1/sql/run", { method: "POST", body: JSON.stringify({ turn_id: answer.turn_id, sql: editor.value }) })).json();
      editing(false);
      state.sessionId = reply.session_id;
      const turn = el("div", { class: "turn" }, el("div", { class: "question" }, `Edited SQL of “${reply.input || ""}”`), await answerView(reply));
      $("#chat").append(turn);
      turn.scrollIntoView({ block: "end" });
      loadSessions().catch(() => {});
    } catch (err) {
      problem.dataset.code = err.code || "";
      problem.textContent = `Not run: ${err.message}`;
    } finally {
      run.disabled = cancel.disabled = false;
    }
  });
  box.append(editor, el("div", { class: "sql-actions" }, edit, run, cancel), problem);
  return box;
}

// --- "Save as verified question" -------------------------------------------------------------
function verifyView(answer) {
  if (!answer.query || !answer.turn_id || isRefusal(answer) || answer.response_type === "stage_checkpoint") return null;
  const m = answer.metadata || {};
  const standalone = !m.edited_sql && !m.followup; // a follow-up's words ("only the top 5") mean nothing alone
  const input = el("input", { type: "text", class: "verify-question", "aria-label": "Verified question", hidden: true,
    placeholder: "The question this SQL answers, as people ask it", value: standalone ? (answer.input || "") : "" });
  const save = el("button", { type: "button", class: "small", hidden: true }, "Save");
  const status = el("span", { class: "verify-status", role: "status" });
  const open = el("button", { type: "button", class: "secondary small" }, "Save as verified question");
  open.addEventListener("click", () => { input.hidden = save.hidden = false; open.hidden = true; input.focus(); });
  save.addEventListener("click", async () => {
    const question = input.value.trim();
    if (!question) { status.textContent = "Write the question first."; return; }
    save.disabled = true;
    status.textContent = "Checking the SQL…";
    status.classList.remove("problem");
    try {
      const saved = await (await api("/v1/verified", { method: "POST", body: JSON.stringify({ turn_id: answer.turn_id, question }) })).json();
      input.hidden = save.hidden = true;
      status.textContent = `Saved as a verified question: “${saved.question}”. Asked in any words, it is answered from this SQL without a model.`;
      loadExamples().catch(() => {});
    } catch (err) {
      status.classList.add("problem");
      status.textContent = "Not saved: " + err.message;
      save.disabled = false;
    }
  });
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") save.click(); });
  return el("div", { class: "verify" }, open, input, save, status);
}
