// The asks about a website's tools (WebMCP page tools, the connection "page:<origin>"):
// - page-tool (origin "page-tool"): a call the policy let run waits for the page to run it. In
//   the <handrail-chat> element on that page, the card runs the tool's execute with the call's
//   arguments and answers with its result ({content, isError}); anywhere else (the web UI, a page
//   of another origin) it says which page it waits for, and offers to cancel the call.
// - pageApproval (an approval of a page tool): "Allow this call only" answers for this call and
//   records nothing; the arrow beside it offers the wider answers (this conversation, always on
//   this website), sent as the approval's content.scope.

import { h, humanize, json, uid } from "../dom.js";
import { button } from "./card.js";
import { confirmLabels, denyWithNote } from "./confirm.js";

function originOf(ask) {
  const id = String(ask.connectionId || "");
  return id.startsWith("page:") ? id.slice(5) : "";
}

function argumentsLine(args) {
  if (!args || typeof args !== "object" || !Object.keys(args).length) return null;
  return h("p", { class: "tool-line" }, "With ", h("code", {}, json(args)));
}

export const pageTool = {
  name: "page-tool",
  label: () => "On the page",
  title: (ask) => ask.input.title || `${ask.toolName ? humanize(ask.toolName) : "A tool"} runs on the page`,
  prompt: () => "",
  controls(ask, card) {
    const origin = originOf(ask);
    const run = card.ctx.runPageTool;
    const here = Boolean(run) && origin === location.origin;
    const name = ask.toolName ? humanize(ask.toolName) : "the tool";
    const status = h(
      "p",
      { class: "card-waiting", role: "status" },
      here ? `Running ${name} on this page…` : `Waiting for the page at ${origin || "its website"} to run ${name}.`,
    );
    if (here) {
      // Once per page: the element runs each call at most once, however many cards show it.
      Promise.resolve(run(ask)).then((result) => {
        if (result && card.pending) card.submit({ action: "accept", content: result });
      });
    }
    const cancel = button("Cancel the call", {
      variant: "ghost",
      dataset: { action: "cancel" },
      onClick: () => card.submit({ action: "cancel", reason: "user_cancelled" }),
    });
    return h("div", { class: "ask-form" }, argumentsLine(ask.preview), status, card.errorSlot("content"), card.actions(cancel));
  },
  summary(ask, response) {
    const result = response && response.content;
    if (result && Array.isArray(result.content)) {
      const text = result.content.filter((part) => part && part.type === "text").map((part) => part.text).join(" ");
      return h(
        "p",
        { class: "summary-line" },
        result.isError ? "The page's tool returned an error: " : "Ran on the page: ",
        h("span", { class: "page-result" }, text || json(result.content)),
      );
    }
    return h("p", { class: "summary-line" }, "Ran on the page");
  },
};

const WIDER = [
  { scope: "conversation", label: "Allow in this conversation" },
  { scope: "always", label: "Always allow on this website" },
];

export const pageApproval = {
  name: "approval",
  label: () => "Approval",
  title: (ask) => ask.input.title || `Allow ${ask.toolName || "this tool"}?`,
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const labels = confirmLabels(ask.input);
    const allow = (scope) => card.submit({ action: "accept", content: { confirmed: true, scope } });
    const menuId = uid("wider");
    const menu = h(
      "div",
      { class: "wider-menu", id: menuId, role: "menu", hidden: true },
      WIDER.map((item) =>
        h(
          "button",
          {
            class: "btn btn-ghost wider-item",
            type: "button",
            role: "menuitem",
            dataset: { scope: item.scope },
            onclick: () => {
              close();
              allow(item.scope);
            },
          },
          item.label,
        ),
      ),
    );
    const arrow = h(
      "button",
      {
        class: `btn ${ask.input.destructive ? "btn-danger" : "btn-primary"} btn-arrow`,
        type: "button",
        "aria-haspopup": "menu",
        "aria-expanded": "false",
        "aria-controls": menuId,
        "aria-label": "More ways to allow",
        dataset: { action: "wider" },
        onclick: () => (menu.hidden ? open() : close()),
      },
      "▾",
    );
    function open() {
      menu.hidden = false;
      arrow.setAttribute("aria-expanded", "true");
      const first = menu.querySelector("button");
      if (first) first.focus();
    }
    function close() {
      menu.hidden = true;
      arrow.setAttribute("aria-expanded", "false");
    }
    menu.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        close();
        arrow.focus();
      }
    });
    const once = button(labels.confirm, {
      variant: ask.input.destructive ? "danger" : "primary",
      dataset: { action: "confirm" },
      onClick: () => allow("once"),
    });
    const deny = button(labels.deny, {
      variant: "secondary",
      dataset: { action: "deny" },
      onClick: () => card.submit({ action: "accept", content: { confirmed: false } }),
    });
    return h(
      "div",
      { class: "ask-form" },
      argumentsLine(card.ctx.heldCall ? (card.ctx.heldCall(ask) || {}).args : null),
      card.errorSlot("content.scope"),
      card.errorSlot("content"),
      h("div", { class: "card-actions" }, h("span", { class: "split-button" }, once, arrow), deny),
      menu,
      denyWithNote(card),
    );
  },
  summary(ask, response) {
    const content = (response && response.content) || {};
    if (content.confirmed !== true) {
      return h("p", { class: "summary-line" }, "Denied: ", h("code", {}, ask.toolName || "the tool"), " did not run");
    }
    const wider = WIDER.find((item) => item.scope === content.scope);
    return h(
      "p",
      { class: "summary-line" },
      "Approved ",
      h("code", {}, ask.toolName || "the tool"),
      ": ",
      h("strong", {}, wider ? wider.label.toLowerCase() : "this call only"),
    );
  },
};
