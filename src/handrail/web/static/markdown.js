// A small, safe markdown renderer. It builds DOM nodes, never HTML strings, so anything in the
// text (including <script> or an onerror attribute) shows as the text it is. Supported: headings,
// paragraphs, emphasis, strong, inline code, fenced code, block quotes, lists, rules, tables
// (GitHub's pipe tables, with alignment), and links to http, https and mailto addresses only.
//
// `MarkdownStream` renders text that grows (a streamed reply) incrementally: the blocks that
// are complete are rendered once and kept; only the last, open block is rendered again, at most
// once per animation frame.

import { h } from "./dom.js";

const INLINE = new RegExp(
  [
    "(`+)([\\s\\S]*?[^`])\\1(?!`)", // 1, 2: code
    "\\*\\*(?=\\S)([\\s\\S]*?\\S)\\*\\*", // 3: strong
    "__(?=\\S)([\\s\\S]*?\\S)__", // 4: strong
    "\\*(?=[^\\s*])([\\s\\S]*?[^\\s*])\\*", // 5: emphasis
    "(?<![A-Za-z0-9])_(?=[^\\s_])([\\s\\S]*?[^\\s_])_(?![A-Za-z0-9])", // 6: emphasis
    "\\[([^\\]]+)\\]\\(([^)\\s]+)\\)", // 7, 8: link
    "(https?://[^\\s<>()]+[^\\s<>().,;:!?\"'])", // 9: bare URL
  ].join("|"),
  "g",
);
const SAFE_URL = /^(https?:\/\/|mailto:)/i;

function link(href, children) {
  if (!SAFE_URL.test(href)) return children;
  return h("a", { href, target: "_blank", rel: "noopener noreferrer" }, children);
}

/** Inline markdown of `text` as an array of nodes and strings. */
export function inline(text) {
  const out = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) out.push(text.slice(last, match.index));
    if (match[1] !== undefined) out.push(h("code", {}, match[2].trim() || match[2]));
    else if (match[3] !== undefined || match[4] !== undefined) {
      out.push(h("strong", {}, inline(match[3] ?? match[4])));
    } else if (match[5] !== undefined || match[6] !== undefined) {
      out.push(h("em", {}, inline(match[5] ?? match[6])));
    } else if (match[7] !== undefined) out.push(link(match[8], inline(match[7])));
    else if (match[9] !== undefined) out.push(link(match[9], match[9]));
    last = match.index + match[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const TABLE_RULE = /^\s{0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** The cells of a table row: split on `|` (not `\|`), without the outer pipes. */
function cells(line) {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

/** Whether lines[i] starts a table: a row with a pipe, then a delimiter row of as many cells. */
function tableAt(lines, i) {
  const head = lines[i];
  const rule = lines[i + 1];
  if (rule === undefined || !head.includes("|") || !TABLE_RULE.test(rule) || !rule.includes("-")) return false;
  return cells(head).length === cells(rule).length;
}

// Every block (a paragraph, a heading, a quote, a list, a table) takes its direction from its
// own first strong character (`dir="auto"`), so a reply or a prompt written in Arabic or
// Hebrew reads right to left, each block apart.
const AUTO = Object.freeze({ dir: "auto" });

function table(lines, i) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : null,
  );
  const cell = (tag, text, index) =>
    h(tag, align[index] ? { class: `align-${align[index]}` } : {}, inline(text));
  const body = [];
  let j = i + 2;
  while (j < lines.length && lines[j].trim() && lines[j].includes("|")) {
    const row = cells(lines[j++]);
    body.push(h("tr", {}, head.map((_, index) => cell("td", row[index] ?? "", index))));
  }
  const node = h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      AUTO, // its columns run in its first cell's direction; the cells inherit it
      h("thead", {}, h("tr", {}, head.map((text, index) => cell("th", text, index)))),
      body.length ? h("tbody", {}, body) : null,
    ),
  );
  return { node, next: j };
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const fence = line.match(FENCE);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1;
      const code = h("code", {}, body.join("\n"));
      if (fence[2]) code.dataset.language = fence[2];
      out.push(h("pre", {}, code));
      continue;
    }
    if (tableAt(lines, i)) {
      const found = table(lines, i);
      out.push(found.node);
      i = found.next;
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      out.push(h(`h${heading[1].length}`, AUTO, inline(heading[2])));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push(h("hr"));
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].match(QUOTE)[1]);
      // A quote takes its first block's direction, which its blocks then inherit (so that its
      // rule is on the side it starts from).
      const inner = blocks(body);
      for (const node of inner) node.removeAttribute("dir");
      out.push(h("blockquote", AUTO, inner));
      continue;
    }
    const bullet = BULLET.test(line);
    const numbered = line.match(NUMBERED);
    if (bullet || numbered) {
      const pattern = bullet ? BULLET : NUMBERED;
      const items = [];
      while (i < lines.length && pattern.test(lines[i])) {
        const match = lines[i++].match(pattern);
        const parts = [bullet ? match[1] : match[2]];
        while (
          i < lines.length && lines[i].trim() && /^\s{2,}/.test(lines[i]) &&
          !BULLET.test(lines[i]) && !NUMBERED.test(lines[i])
        ) parts.push(lines[i++].trim());
        items.push(h("li", {}, inline(parts.join(" "))));
      }
      const start = numbered && numbered[1] !== "1" ? Number(numbered[1]) : null;
      // A list takes its first item's direction (its items inherit it, so its markers and
      // indent are on that side).
      out.push(h(bullet ? "ul" : "ol", { start, dir: "auto" }, items));
      continue;
    }
    const para = [];
    while (
      i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) &&
      !QUOTE.test(lines[i]) && !BULLET.test(lines[i]) && !NUMBERED.test(lines[i]) &&
      !RULE.test(lines[i]) && !(para.length && tableAt(lines, i))
    ) para.push(lines[i++]);
    const content = [];
    para.forEach((text, index) => {
      if (index > 0) content.push(/ {2,}$/.test(para[index - 1]) ? h("br") : " ");
      content.push(...inline(text.trim()));
    });
    out.push(h("p", AUTO, content));
  }
  return out;
}

/** The rendered markdown of `text` as a fragment. */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  for (const node of blocks(String(text ?? "").split(/\r\n?|\n/))) fragment.append(node);
  return fragment;
}

/**
 * Markdown that grows: `append(delta)` adds text, and the element shows it rendered. Blocks
 * that a blank line (outside a code fence) or a closed fence ended are rendered once into
 * the settled part and never again; the open tail is rendered again at most once per frame.
 * So a long streamed reply costs about what rendering it once does, not once per delta.
 */
export class MarkdownStream {
  constructor(el) {
    this.el = el;
    this.settled = document.createElement("div");
    this.settled.className = "md-settled";
    this.tail = document.createElement("div");
    this.tail.className = "md-tail";
    el.replaceChildren(this.settled, this.tail);
    this.text = "";
    this.done = 0; // the text before this is settled (rendered into `settled`)
    this.scan = 0; // lines are scanned up to here
    this.fence = null; // the open fence's marker, while inside one
    this.frame = 0;
  }

  append(delta) {
    this.text += delta;
    this.settle();
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paint());
  }

  /** Render the open tail now (the stream ended, or a test wants it). */
  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.paint();
  }

  settle() {
    let boundary = this.done;
    for (;;) {
      const end = this.text.indexOf("\n", this.scan);
      if (end < 0) break;
      const line = this.text.slice(this.scan, end);
      this.scan = end + 1;
      const fence = line.match(FENCE);
      if (this.fence) {
        if (line.trim().startsWith(this.fence)) {
          this.fence = null;
          boundary = this.scan;
        }
      } else if (fence) {
        this.fence = fence[1];
      } else if (!line.trim()) {
        boundary = this.scan;
      }
    }
    if (boundary > this.done) {
      this.settled.append(renderMarkdown(this.text.slice(this.done, boundary)));
      this.done = boundary;
    }
  }

  paint() {
    this.frame = 0;
    this.tail.replaceChildren(renderMarkdown(this.text.slice(this.done)));
  }
}
