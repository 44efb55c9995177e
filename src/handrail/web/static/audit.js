// The audit log (GET /audit, newest first, a page at a time: "Show more" follows the Link
// header's next page): every gate that was asked and how it ended, who answered, from where
// (web, watch, headless, card, link, expiry), the note or the edit, and what became of the
// call; for admins also the connections' changes. An admin reads all of it; anyone else the
// gates of their own conversations and the ones they answered. Filters: tool, user (who
// answered, or whose conversation) and a time range. The two downloads export every matching
// record as JSON Lines or CSV (GET /audit?format=jsonl|csv), fetched with the token like every
// call. Arguments and previews are only ever digests in the log, so nothing here shows them.

import { getBlob, getPage } from "./api.js";
import { isReasonCode, reasonWords } from "./cards/card.js";
import { ago, h, replace, uid } from "./dom.js";
import { onEvent } from "./live.js";

const ACTIONS = {
  "gate.asked": "Asked",
  "gate.approved": "Approved",
  "gate.denied": "Denied",
  "gate.answered": "Answered",
  "gate.declined": "Declined",
  "gate.cancelled": "Cancelled",
  "gate.expired": "Expired",
  "gate.reminded": "Reminder due",
  "gate.outcome": "Outcome",
  "connection.created": "Connection added",
  "connection.updated": "Connection changed",
  "connection.deleted": "Connection removed",
  "connection.refreshed": "Connection refreshed",
  "connection.authorized": "Connection signed in",
  "connection.instructions.reset": "Instructions reset",
};

/** An approval's standing yes, as the approval's buttons name it. */
const SCOPES = { conversation: "for this conversation", always: "always for this tool" };

const GATES = {
  approval: "approval",
  confirmation: "confirmation",
  permission: "permission",
  selection: "choice",
  elicitation: "request from an app",
  "page-tool": "page tool",
};

/** What became of the held call (a gate.outcome record's status). */
const OUTCOMES = {
  succeeded: "ran",
  failed: "failed",
  denied: "denied: it did not run",
  uncertain: "may or may not have run",
  waiting: "waiting on another answer",
};

const VIAS = { web: "the web app", watch: "the watch", headless: "a headless client", card: "a card button", link: "an email link", expiry: "its expiry" };

/** What a record's changes say, in a few words for a person (never a digest's value). */
export function detailOf(record) {
  const c = record.changes || {};
  const parts = [];
  if (record.action === "gate.asked") {
    const gate = GATES[c.origin] || (c.kind ? `${c.kind} ask` : "ask");
    parts.push(`${/^[aeiou]/.test(gate) ? "an" : "a"} ${gate}`);
    if (c.approvers && c.approvers.length) parts.push(`approvers: ${c.approvers.join(", ")}${c.quorum > 1 ? ` (${c.quorum} must approve)` : ""}`);
    if (c.expiresAt) parts.push(`expires ${new Date(c.expiresAt).toLocaleString()}`);
  } else if (record.action === "gate.outcome") {
    parts.push(OUTCOMES[c.status] || c.status || "");
  } else if (record.action.startsWith("gate.")) {
    if (c.via) parts.push(`from ${VIAS[c.via] || c.via}`);
    // A reason is a person's note, or one of the server's codes (said in words).
    if (c.reason) parts.push(isReasonCode(c.reason) ? reasonWords(c.reason) : `note: “${c.reason}”`);
    if (c.edit && c.edit.fields) parts.push(`edited ${c.edit.fields.join(", ")}`);
    if (c.scope) parts.push(SCOPES[c.scope] || `for ${c.scope}`);
    if (c.approvals !== undefined) parts.push(`${c.approvals} of ${c.quorum} approvals`);
  } else if (record.action.startsWith("connection.")) {
    parts.push(...connectionDetail(record.action, c));
  }
  return parts.filter(Boolean).join(" · ");
}

/** What a connection's change is called on the page (its fields in the record's `changes`). */
const CONNECTION_FIELDS = {
  name: "name",
  settings: "settings",
  trusted: "trust",
  agents: "its agents",
  overrides: "tool classes",
  approvals: "approvers",
  agentInstructions: "instructions",
  timeout: "timeout",
  mcp: "server command",
  protocol: "protocol",
};

function secretsDetail(secrets) {
  const parts = [];
  if (secrets && secrets.set && secrets.set.length) parts.push(`secrets set: ${secrets.set.join(", ")}`);
  if (secrets && secrets.removed && secrets.removed.length) parts.push(`secrets removed: ${secrets.removed.join(", ")}`);
  return parts;
}

/** A connection record's details in words: which connection, and what changed (the new name,
 * the trust given or taken back, the other fields by name). */
function connectionDetail(action, c) {
  if (action === "connection.created") {
    const app = c.app && c.app !== "custom" ? `the ${c.app} app` : "a custom connection";
    return [`“${c.name}”, ${app}`, c.trusted ? "trusted" : "not trusted", ...secretsDetail(c.secrets)];
  }
  if (action === "connection.deleted") return [c.name ? `“${c.name}”` : ""];
  if (action === "connection.refreshed") return [typeof c.toolCount === "number" ? `${c.toolCount} tool${c.toolCount === 1 ? "" : "s"}` : ""];
  if (action === "connection.authorized") return [typeof c.signIn === "string" ? `now ${c.signIn}` : ""];
  if (action === "connection.instructions.reset") return ["instructions from the app's template"];
  if (action !== "connection.updated") return [];
  const changed = [];
  for (const [key, label] of Object.entries(CONNECTION_FIELDS)) {
    if (!(key in c)) continue;
    if (key === "name") changed.push(`name to “${c.name}”`);
    else if (key === "trusted") changed.push(c.trusted ? "trusted it" : "took its trust back");
    else changed.push(label);
  }
  return [changed.length ? `changed ${changed.join(", ")}` : "", ...secretsDetail(c.secrets)];
}

function isoOf(local) {
  if (!local) return null;
  const when = new Date(local);
  return Number.isNaN(when.getTime()) ? null : when.toISOString();
}

export function auditPage(main, ctx) {
  const admin = Boolean(ctx.info.user.isAdmin);
  const ids = { tool: uid("audit-tool"), user: uid("audit-user"), since: uid("audit-since"), until: uid("audit-until") };
  const tool = h("input", { id: ids.tool, class: "input", type: "text", name: "tool", autocomplete: "off", placeholder: "any tool" });
  const user = h("input", { id: ids.user, class: "input", type: "text", name: "user", autocomplete: "off", placeholder: "anyone" });
  const since = h("input", { id: ids.since, class: "input", type: "datetime-local", name: "since" });
  const until = h("input", { id: ids.until, class: "input", type: "datetime-local", name: "until" });
  const status = h("p", { class: "muted audit-status", role: "status" }, "Loading…");
  const body = h("tbody", {});
  const columns = ["When", "What", "Tool", "Who", "Conversation of", "Details"];
  const table = h(
    "table",
    { class: "data-table audit-table", hidden: true },
    h("caption", { class: "sr-only" }, "Audit log"),
    h("thead", {}, h("tr", {}, columns.map((name) => h("th", { scope: "col" }, name)))),
    body,
  );
  const more = h("button", { class: "btn btn-secondary btn-small", type: "button", hidden: true, onclick: loadMore }, "Show more");
  let alive = true;
  let items = [];
  let next = null;
  let loading = 0;
  let soon = 0;

  function query(extra = {}) {
    const params = new URLSearchParams();
    if (tool.value.trim()) params.set("tool", tool.value.trim());
    if (user.value.trim()) params.set("user", user.value.trim());
    const from = isoOf(since.value);
    const to = isoOf(until.value);
    if (from) params.set("since", from);
    if (to) params.set("until", to);
    for (const [key, value] of Object.entries(extra)) params.set(key, value);
    const text = params.toString();
    return text ? `?${text}` : "";
  }

  function row(record) {
    const cell = (label, ...content) => h("td", { "data-label": label }, ...content);
    return h(
      "tr",
      { class: "audit-record", dataset: { action: record.action, id: record.id } },
      cell("When", h("time", { datetime: record.created, title: new Date(record.created).toLocaleString() }, ago(record.created))),
      cell("What", ACTIONS[record.action] || record.action),
      cell("Tool", record.tool ? h("code", {}, record.tool) : "—"),
      cell("Who", record.actor.startsWith("agent:") ? `the agent ${record.actor.slice(6)}` : record.actor),
      cell("Conversation of", record.ownerId || "—"),
      cell("Details", detailOf(record)),
    );
  }

  function show() {
    replace(body, items.map(row));
    table.hidden = !items.length;
    const count = next ? `${items.length}+` : String(items.length);
    status.textContent = items.length ? `${count} record${items.length === 1 && !next ? "" : "s"}.` : "No record matches.";
    more.hidden = !next;
  }

  async function load() {
    const run = ++loading;
    try {
      const page = await getPage(`/audit${query()}`);
      if (!alive || run !== loading) return;
      items = page.items;
      next = page.next;
      show();
      table.dataset.loaded = "true";
    } catch (error) {
      if (alive && run === loading) {
        items = [];
        next = null;
        show();
        status.textContent = error.message;
      }
    }
  }

  async function loadMore() {
    if (!next) return;
    const run = loading;
    more.disabled = true;
    try {
      const page = await getPage(next);
      if (!alive || run !== loading) return;
      const known = new Set(items.map((r) => r.id));
      items = items.concat(page.items.filter((r) => !known.has(r.id)));
      next = page.next;
      show();
    } catch (error) {
      status.textContent = error.message;
    } finally {
      more.disabled = false;
    }
  }

  async function download(format) {
    try {
      const blob = await getBlob(`/audit${query({ format })}`);
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: `audit.${format}`, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      status.textContent = `Downloaded audit.${format}.`;
    } catch (error) {
      status.textContent = error.message;
    }
  }

  const field = (id, label, input) => h("div", { class: "field" }, h("label", { for: id }, label), input);
  const filters = h(
    "form",
    {
      class: "audit-filters",
      role: "search",
      "aria-label": "Filter the audit log",
      onsubmit: (event) => {
        event.preventDefault();
        load();
      },
    },
    field(ids.tool, "Tool", tool),
    field(ids.user, "User", user),
    field(ids.since, "From", since),
    field(ids.until, "Until", until),
    h(
      "div",
      { class: "button-row" },
      h("button", { class: "btn btn-primary btn-small", type: "submit" }, "Filter"),
      h(
        "button",
        {
          class: "btn btn-secondary btn-small",
          type: "button",
          onclick: () => {
            for (const input of [tool, user, since, until]) input.value = "";
            load();
          },
        },
        "Clear",
      ),
    ),
  );
  replace(
    main,
    h(
      "div",
      { class: "wide" },
      h("h1", {}, "Audit log"),
      h(
        "p",
        { class: "lead" },
        "Every approval, confirmation and question that was asked, how it ended, who answered and from where. ",
        admin ? "As an admin you see all of it, and the connections' changes." : "You see the gates of your own conversations and the ones you answered.",
      ),
      filters,
      h(
        "div",
        { class: "toolbar" },
        status,
        h(
          "div",
          { class: "button-row" },
          h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: () => download("jsonl") }, "Download JSON Lines"),
          h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: () => download("csv") }, "Download CSV"),
        ),
      ),
      table,
      more,
    ),
  );
  load();
  // A gate answered or asked anywhere adds records: read the first page again.
  const stopListening = onEvent((event) => {
    if (!event.kind.startsWith("ask.")) return;
    clearTimeout(soon);
    soon = setTimeout(() => alive && !since.value && !until.value && load(), 300);
  });
  return () => {
    alive = false;
    clearTimeout(soon);
    stopListening();
  };
}
