// Markdown for answers and document passages, rendered safely: the text is never parsed as
// HTML. Blocks and inline marks are recognised here and built as elements whose content is
// set as text, so a passage containing <script> or <img onerror> shows those characters.
// Supported: paragraphs, headings, bullet and numbered lists, block quotes, fenced code,
// pipe tables, **bold**, *italic* / _italic_, `code`, [links](https://...) (http(s) and
// mailto only; anything else stays text), and citation marks [1].
"use strict";

const INLINE = [
  { kind: "code", re: /`([^`\n]+)`/ },
  { kind: "link", re: /\[([^\]\n]{1,300})\]\(([^)\s]{1,2000})\)/ },
  // underscores mark emphasis only between spaces or punctuation: "window.__name" or
  // snake_case_names are words, not emphasis
  { kind: "bold", re: /\*\*([^*\n]+?)\*\*|(?<![^\s(])__(?!\s)([^_\n]+?)__(?![^\s.,;:!?)])/ },
  { kind: "italic", re: /(?<![\w*])\*([^*\n]+?)\*(?![\w*])|(?<![^\s(])_(?!\s)([^_\n]+?)_(?![^\s.,;:!?)])/ },
  { kind: "cite", re: /\[(\d{1,3})\]/ },
];
const SAFE_LINK = /^(https?:\/\/|mailto:)/i;

function inline(text) {
  const out = [];
  let rest = text;
  while (rest) {
    let best = null;
    for (const rule of INLINE) {
      const m = rule.re.exec(rest);
      if (m && (best === null || m.index < best.m.index)) best = { rule, m };
    }
    if (!best) { out.push(document.createTextNode(rest)); break; }
    const { rule, m } = best;
    if (m.index) out.push(document.createTextNode(rest.slice(0, m.index)));
    const inner = m[1] ?? m[2] ?? "";
    if (rule.kind === "code") out.push(el("code", {}, inner));
    else if (rule.kind === "bold") out.push(el("strong", {}, ...inline(inner)));
    else if (rule.kind === "italic") out.push(el("em", {}, ...inline(inner)));
    else if (rule.kind === "cite") out.push(el("span", { class: "cite" }, `[${inner}]`));
    else if (rule.kind === "link") {
      const href = m[2];
      out.push(SAFE_LINK.test(href) ? el("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" }, ...inline(m[1])) : document.createTextNode(m[0]));
    }
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}

const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d{1,4}[.)]\s+(.*)$/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

// options.actions: {text: callback} turns list items with exactly that text into buttons
// (the "Did you mean" suggestions inside a refusal).
function renderMarkdown(text, options = {}) {
  const actions = options.actions || {};
  const root = el("div", { class: "md" });
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) root.append(el("p", {}, ...inline(paragraph.join(" "))));
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*```/.test(line)) {
      flush();
      const code = [];
      for (i++; i < lines.length && !/^\s*```/.test(lines[i]); i++) code.push(lines[i]);
      root.append(el("pre", {}, el("code", {}, code.join("\n"))));
      continue;
    }
    if (!line.trim()) { flush(); continue; }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      root.append(el(`h${Math.min(6, heading[1].length + 2)}`, {}, ...inline(heading[2])));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
      flush();
      const head = el("tr", {}, ...cells(line).map((c) => el("th", {}, ...inline(c))));
      const body = [];
      for (i += 2; i < lines.length && lines[i].includes("|") && lines[i].trim(); i++)
        body.push(el("tr", {}, ...cells(lines[i]).map((c) => el("td", {}, ...inline(c)))));
      i--;
      root.append(el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body))));
      continue;
    }
    const listKind = BULLET.test(line) ? "ul" : NUMBERED.test(line) ? "ol" : null;
    if (listKind) {
      flush();
      const pattern = listKind === "ul" ? BULLET : NUMBERED;
      const list = el(listKind);
      for (; i < lines.length && pattern.test(lines[i]); i++) {
        const item = pattern.exec(lines[i])[1];
        const action = Object.prototype.hasOwnProperty.call(actions, item.trim()) ? actions[item.trim()] : null;
        list.append(el("li", {}, action ? el("button", { class: "suggestion", type: "button", onclick: action }, item.trim()) : el("span", {}, ...inline(item))));
      }
      i--;
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quote = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i++) quote.push(lines[i].replace(/^\s*>\s?/, ""));
      i--;
      root.append(el("blockquote", {}, ...inline(quote.join(" "))));
      continue;
    }
    paragraph.push(line.trim());
  }
  flush();
  return root;
}
