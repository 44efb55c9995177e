// The inbox: every ask waiting on the user, across conversations, newest first
// (GET /histories/pendingAsks, a page at a time: "Show more" follows the Link header's next
// page). Each links to its conversation, where its card is answered.

import { getPage } from "./api.js";
import { approvalsSection } from "./approvals.js";
import { ago, h, replace } from "./dom.js";
import { changesAsks, onEvent } from "./live.js";

const KIND_LABELS = {
  choice: "Choose",
  confirm: "Confirm",
  markdown: "Edit",
  form: "Form",
  files: "Files",
};

function inboxItem(item) {
  return h(
    "li",
    { class: "inbox-item", dataset: { historyId: item.historyId, toolCallId: item.toolCallId } },
    h(
      "a",
      { href: `/c/${item.historyId}`, "data-link": "", class: "inbox-link" },
      h("span", { class: `badge badge-${item.kind}` }, KIND_LABELS[item.kind] || item.kind),
      h("span", { class: "inbox-title" }, item.simple.title || item.title || "A question"),
    ),
    h("p", { class: "inbox-text" }, item.simple.text),
    h(
      "p",
      { class: "inbox-meta" },
      item.title ? ["In “", item.title, "” · "] : null,
      h("time", { datetime: item.created }, ago(item.created)),
    ),
  );
}

export function inboxPage(main, ctx) {
  const list = h("ul", { class: "inbox-list", "aria-label": "Waiting on you" });
  const status = h("p", { class: "muted", role: "status" }, "Loading…");
  const more = h("button", { class: "btn btn-secondary btn-small inbox-more", type: "button", hidden: true, onclick: loadMore }, "Show more");
  let alive = true;
  let next = null;
  let shown = 0;
  let loading = 0; // a newer load makes the answers of older ones stale
  const approvals = approvalsSection(ctx.info);

  function showStatus() {
    const count = next ? `${shown}+` : String(shown);
    status.textContent = shown
      ? `${count} ask${shown === 1 && !next ? "" : "s"} waiting on you.`
      : "Nothing is waiting on you.";
    more.hidden = !next;
  }

  async function load() {
    const run = ++loading;
    try {
      const page = await getPage("/histories/pendingAsks");
      if (!alive || run !== loading) return;
      next = page.next;
      shown = page.items.length;
      replace(list, page.items.map(inboxItem));
      showStatus();
      ctx.refreshPending();
    } catch (error) {
      status.textContent = error.message;
    }
  }

  async function loadMore() {
    if (!next) return;
    const run = loading;
    more.disabled = true;
    try {
      const page = await getPage(next);
      if (!alive || run !== loading) return;
      next = page.next;
      // Pages never overlap (keyset), but a conversation is never listed twice either way.
      const fresh = page.items.filter((item) => !list.querySelector(`[data-history-id="${CSS.escape(item.historyId)}"]`));
      shown += fresh.length;
      list.append(...fresh.map(inboxItem));
      showStatus();
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
      { class: "narrow" },
      h("h1", {}, "Inbox"),
      h("p", { class: "lead" }, "Questions the agents are waiting on, newest first. Open one to answer it."),
      h("div", { class: "toolbar" }, status, h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: load }, "Refresh")),
      list,
      more,
      approvals.el,
    ),
  );
  load();
  // Live: an ask created, answered or cancelled anywhere (another tab, device or server
  // process) shows here at once.
  let soon = 0;
  const stopListening = onEvent((event) => {
    if (!changesAsks(event)) return;
    clearTimeout(soon);
    soon = setTimeout(() => alive && load(), 50);
  });
  return () => {
    alive = false;
    clearTimeout(soon);
    stopListening();
  };
}
