// A small, safe markdown renderer. It builds DOM nodes, never HTML strings, so anything in the
// text (including <script> or an onerror attribute) shows as the text it is. Supported: headings,
// paragraphs, emphasis, strong, inline code, fenced code, block quotes, lists, rules, and links
// to http, https and mailto addresses only.

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
    const heading = line.match(HEADING);
    if (heading) {
      out.push(h(`h${heading[1].length}`, {}, inline(heading[2])));
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
      out.push(h("blockquote", {}, blocks(body)));
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
      out.push(h(bullet ? "ul" : "ol", { start }, items));
      continue;
    }
    const para = [];
    while (
      i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i]) &&
      !QUOTE.test(lines[i]) && !BULLET.test(lines[i]) && !NUMBERED.test(lines[i]) &&
      !RULE.test(lines[i])
    ) para.push(lines[i++]);
    const content = [];
    para.forEach((text, index) => {
      if (index > 0) content.push(/ {2,}$/.test(para[index - 1]) ? h("br") : " ");
      content.push(...inline(text.trim()));
    });
    out.push(h("p", {}, content));
  }
  return out;
}

/** The rendered markdown of `text` as a fragment. */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  for (const node of blocks(String(text ?? "").split(/\r\n?|\n/))) fragment.append(node);
  return fragment;
}
