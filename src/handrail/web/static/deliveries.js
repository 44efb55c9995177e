// The delivery log: every webhook and email sent for an event (GET /deliveries, newest first,
// a page at a time: "Show more" follows the Link header's next page). Each row says which
// event, where it went, its state, how many attempts it took and when the next retry is due;
// "Attempts" opens the log of its attempts (GET /deliveries/{id}: the HTTP status or error of
// each, never a body). An admin reads everyone's; anyone else their own. The list reads itself
// again after an ask event (each may send deliveries) and when a retry falls due.

import { get, getPage } from "./api.js";
import { ago, h, replace } from "./dom.js";
import { changesAsks, onEvent } from "./live.js";

const STATES = {
  pending: { label: "Retrying", badge: "badge-state-starting" },
  delivered: { label: "Delivered", badge: "badge-state-connected" },
  failed: { label: "Failed", badge: "badge-state-error" },
};

const EVENTS = {
  "ask.created": "Ask created",
  "ask.reminder": "Reminder",
  "ask.answered": "Ask answered",
  "ask.cancelled": "Ask cancelled",
};

/** "in 4 min", "in 30 s", "due now": when a retry falls due. */
export function dueIn(iso, now = Date.now()) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "";
  const seconds = Math.round((then - now) / 1000);
  if (seconds <= 0) return "due now";
  if (seconds < 60) return `in ${seconds} s`;
  if (seconds < 3600) return `in ${Math.round(seconds / 60)} min`;
  return `in ${Math.round(seconds / 3600)} h`;
}

function where(delivery) {
  return delivery.channel === "email" ? `Email to ${delivery.target}` : `Webhook “${delivery.target}”`;
}

function attemptLine(attempt) {
  const outcome =
    attempt.error ||
    (attempt.statusCode === null || attempt.statusCode === undefined
      ? "no answer"
      : `HTTP ${attempt.statusCode}${attempt.statusCode >= 200 && attempt.statusCode < 300 ? " (delivered)" : ""}`);
  return h(
    "li",
    { class: "delivery-attempt" },
    `Attempt ${attempt.attempt}: ${outcome}`,
    Number.isInteger(attempt.durationMs) ? ` · ${attempt.durationMs} ms` : null,
    " · ",
    h("time", { datetime: attempt.created }, ago(attempt.created)),
  );
}

export function deliveriesPage(main, ctx) {
  const admin = Boolean(ctx.info.user.isAdmin);
  const status = h("p", { class: "muted", role: "status" }, "Loading…");
  const body = h("tbody", {});
  const table = h(
    "table",
    { class: "data-table deliveries-table", hidden: true },
    h("caption", { class: "sr-only" }, "Deliveries"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Event", "Where", admin ? "User" : null, "Status", "Attempts", "Next retry", "Last error", "Created"]
          .filter(Boolean)
          .map((name) => h("th", { scope: "col" }, name)),
        h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Details")),
      ),
    ),
    body,
  );
  const list = h("div", { class: "deliveries" }, table);
  const more = h("button", { class: "btn btn-secondary btn-small", type: "button", hidden: true, onclick: loadMore }, "Show more");
  let alive = true;
  let items = [];
  let next = null;
  let loading = 0;
  let due = 0; // the timer of the next retry falling due
  let soon = 0;
  const open = new Set(); // the deliveries whose attempts are shown

  function row(delivery) {
    const state = STATES[delivery.status] || { label: delivery.status, badge: "" };
    const columns = admin ? 9 : 8;
    const details = h("tr", { class: "delivery-log", hidden: true }, h("td", { colspan: columns }, h("p", { class: "muted" }, "Loading…")));
    const toggle = h(
      "button",
      { class: "btn btn-ghost btn-small", type: "button", "aria-expanded": "false", "aria-label": `Attempts of ${EVENTS[delivery.type] || delivery.type} to ${where(delivery)}` },
      "Attempts",
    );
    async function showLog() {
      details.hidden = false;
      toggle.setAttribute("aria-expanded", "true");
      open.add(delivery.id);
      try {
        const full = await get(`/deliveries/${encodeURIComponent(delivery.id)}`);
        const log = full.log || [];
        replace(
          details.firstElementChild,
          log.length ? h("ul", { class: "delivery-attempts" }, log.map(attemptLine)) : h("p", { class: "muted" }, "No attempt yet."),
        );
      } catch (error) {
        replace(details.firstElementChild, h("p", { role: "alert" }, error.message));
      }
    }
    toggle.addEventListener("click", () => {
      if (open.has(delivery.id)) {
        open.delete(delivery.id);
        details.hidden = true;
        toggle.setAttribute("aria-expanded", "false");
      } else showLog();
    });
    const cell = (label, ...content) => h("td", { "data-label": label }, ...content);
    const cells = [
      cell("Event", EVENTS[delivery.type] || delivery.type, " ", h("code", { class: "delivery-event-id", title: "The event's id (the webhook-id header)" }, delivery.eventId)),
      cell("Where", where(delivery)),
      admin ? cell("User", delivery.userId || "") : null,
      cell("Status", h("span", { class: `badge ${state.badge}` }, state.label)),
      cell("Attempts", String(delivery.attempts)),
      cell("Next retry", delivery.status === "pending" && delivery.nextAttempt ? h("time", { datetime: delivery.nextAttempt }, dueIn(delivery.nextAttempt)) : "—"),
      cell("Last error", delivery.lastError || "—"),
      cell("Created", h("time", { datetime: delivery.created }, ago(delivery.created))),
      h("td", {}, toggle),
    ].filter(Boolean);
    const el = h("tr", { class: "delivery", dataset: { deliveryId: delivery.id, status: delivery.status, target: delivery.target } }, cells);
    if (open.has(delivery.id)) showLog();
    return [el, details];
  }

  function show() {
    replace(body, items.map(row));
    table.hidden = !items.length;
    const count = next ? `${items.length}+` : String(items.length);
    status.textContent = items.length
      ? `${count} deliver${items.length === 1 && !next ? "y" : "ies"}.`
      : "Nothing was sent yet: a webhook or email goes out when an ask is created, answered, cancelled or reminded.";
    more.hidden = !next;
    // A retry that falls due changes its row: read the list again then.
    clearTimeout(due);
    const times = items
      .filter((d) => d.status === "pending" && d.nextAttempt)
      .map((d) => Date.parse(d.nextAttempt))
      .filter((t) => !Number.isNaN(t));
    if (times.length) {
      const wait = Math.max(2000, Math.min(...times) - Date.now() + 1000);
      due = setTimeout(() => alive && load(), Math.min(wait, 3_600_000));
    }
  }

  async function load() {
    const run = ++loading;
    try {
      const page = await getPage("/deliveries");
      if (!alive || run !== loading) return;
      items = page.items;
      next = page.next;
      show();
      table.dataset.loaded = "true";
    } catch (error) {
      if (alive) status.textContent = error.message;
    }
  }

  async function loadMore() {
    if (!next) return;
    const run = loading;
    more.disabled = true;
    try {
      const page = await getPage(next);
      if (!alive || run !== loading) return;
      const known = new Set(items.map((d) => d.id));
      items = items.concat(page.items.filter((d) => !known.has(d.id)));
      next = page.next;
      show();
    } catch (error) {
      status.textContent = error.message;
    } finally {
      more.disabled = false;
    }
  }

  replace(
    main,
    h(
      "div",
      { class: "wide" },
      h("h1", {}, "Deliveries"),
      h(
        "p",
        { class: "lead" },
        "The webhooks and emails sent for asks, newest first: where each went, its attempts, and when a failed one is tried again. ",
        admin ? "As an admin you see everyone's." : "You see the deliveries of your own asks.",
      ),
      h("div", { class: "toolbar" }, status, h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: load }, "Refresh")),
      list,
      more,
    ),
  );
  load();
  const stopListening = onEvent((event) => {
    if (!changesAsks(event)) return;
    // The outbox sends a moment after the event: read the log once it had the time to.
    clearTimeout(soon);
    soon = setTimeout(() => alive && load(), 500);
  });
  return () => {
    alive = false;
    clearTimeout(due);
    clearTimeout(soon);
    stopListening();
  };
}
