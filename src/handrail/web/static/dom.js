// Small DOM helpers: every element is built with h(), so text is always set as text, never
// parsed as HTML.

const PROPS = new Set(["value", "checked", "selected", "indeterminate"]);

/** An element: h("button", {class: "btn", onclick: fn}, "Save"). Attributes that are null,
 * undefined or false are left out; `true` sets an empty attribute; `on<event>` adds a listener;
 * value/checked/selected are set as properties after the children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  const props = [];
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (PROPS.has(key)) props.push([key, value]);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  for (const [key, value] of props) el[key] = value;
  return el;
}

/** Append children (nodes, strings, numbers, nested arrays; null and false are skipped). */
export function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

let counter = 0;
/** A new unique element id with a readable prefix. */
export function uid(prefix = "id") {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** Remove every child of `el`, then append `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, ...children);
}

/** A list in words: ["a", "b", "c"] -> "a, b and c". */
export function words(items, conjunction = "and") {
  const list = items.filter((item) => item !== "" && item !== null && item !== undefined);
  if (list.length <= 1) return list.join("");
  return `${list.slice(0, -1).join(", ")} ${conjunction} ${list[list.length - 1]}`;
}

const TIME = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const DATE_TIME = new Intl.DateTimeFormat(undefined, {
  month: "short", day: "numeric", hour: "2-digit", minute: "2-digit",
});

/** "just now", "5 min ago", or the date and time. */
export function ago(iso, now = Date.now()) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.round((now - then) / 1000);
  if (seconds < 45) return "just now";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400 && new Date(then).getDate() === new Date(now).getDate()) {
    return `today ${TIME.format(then)}`;
  }
  return DATE_TIME.format(then);
}

/** A time of day, such as 14:05. */
export function clock(iso) {
  const then = Date.parse(iso);
  return Number.isNaN(then) ? "" : TIME.format(then);
}

/** A byte count for people: 512 bytes, 48.2 KB, 3.1 MB. */
export function bytes(size) {
  if (!Number.isFinite(size)) return "";
  if (size < 1000) return `${size} bytes`;
  if (size < 1_000_000) return `${(size / 1000).toFixed(1)} KB`;
  return `${(size / 1_000_000).toFixed(1)} MB`;
}

/** Compact JSON for display. */
export function json(value) {
  try {
    return typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    return String(value);
  }
}

/** "partySize" or "party_size" -> "Party size". */
export function humanize(key) {
  const spaced = String(key)
    .replace(/[_-]+/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .trim();
  const cased = spaced.replace(/\b(url|id|api|http|https|ip|uuid)\b/g, (word) => word.toUpperCase());
  return cased.charAt(0).toUpperCase() + cased.slice(1);
}
