// The inbox: every ask waiting on the user, across conversations, newest first
// (GET /histories/pendingAsks). Each links to its conversation, where its card is answered.

import { get } from "./api.js";
import { ago, h, replace } from "./dom.js";

const KIND_LABELS = {
  choice: "Choose",
  confirm: "Confirm",
  markdown: "Edit",
  form: "Form",
  files: "Files",
};

export function inboxPage(main, ctx) {
  const list = h("ul", { class: "inbox-list", "aria-label": "Waiting on you" });
  const status = h("p", { class: "muted", role: "status" }, "Loading…");
  let alive = true;

  async function load() {
    try {
      const items = await get("/histories/pendingAsks");
      if (!alive) return;
      status.textContent = items.length
        ? `${items.length} ask${items.length === 1 ? "" : "s"} waiting on you.`
        : "Nothing is waiting on you.";
      replace(
        list,
        items.map((item) =>
          h(
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
          ),
        ),
      );
      ctx.refreshPending();
    } catch (error) {
      status.textContent = error.message;
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
    ),
  );
  load();
  return () => {
    alive = false;
  };
}
