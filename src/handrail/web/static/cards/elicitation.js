// The asks an MCP server makes during a tool call (origin "elicitation"), with the server's name
// and the tool that asks:
// - a form (or, for a request with no fields, a confirm) like any other, its answer going back
//   to the server;
// - a URL request (ask.elicitation: {mode: "url", url, server}): the whole URL shown as text and
//   the server's name; approving is consent only. handrail never opens or fetches the URL: the
//   page opens in a new tab only when the person clicks the link (and only http or https URLs
//   are links at all).

import { h } from "../dom.js";
import { button } from "./card.js";
import { confirm, confirmLabels } from "./confirm.js";
import { form } from "./form.js";

function serverOf(ask) {
  const server = ask.elicitation && ask.elicitation.server;
  return typeof server === "string" && server ? server : "A connection";
}

function askedBy(ask) {
  return h(
    "p",
    { class: "tool-line elicitation-from" },
    `${serverOf(ask)} asks this while `,
    h("code", {}, ask.toolName || "its tool"),
    " runs. Your answer goes to that server.",
  );
}

function isWebUrl(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:";
  } catch {
    return false;
  }
}

const elicitationForm = {
  ...form,
  label: () => "Server asks",
  controls(ask, card) {
    return h("div", { class: "elicitation" }, askedBy(ask), form.controls(ask, card));
  },
};

const elicitationConfirm = {
  ...confirm,
  label: () => "Server asks",
  controls(ask, card) {
    return h("div", { class: "elicitation" }, askedBy(ask), confirm.controls(ask, card));
  },
};

const elicitationUrl = {
  name: "confirm",
  label: () => "Open a page",
  title: (ask) => ask.input.title || `${serverOf(ask)} asks you to open a page`,
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const url = String((ask.elicitation && ask.elicitation.url) || "");
    const labels = confirmLabels(ask.input);
    const shown = isWebUrl(url)
      ? h("a", { class: "elicitation-url", href: url, target: "_blank", rel: "noopener noreferrer" }, url)
      : h("code", { class: "elicitation-url" }, url);
    const yes = button(labels.confirm, {
      variant: "primary",
      dataset: { action: "confirm" },
      onClick: () => card.submit({ action: "accept", content: { confirmed: true } }),
    });
    const no = button(labels.deny, {
      variant: "secondary",
      dataset: { action: "deny" },
      onClick: () => card.submit({ action: "accept", content: { confirmed: false } }),
    });
    return h(
      "div",
      { class: "ask-form elicitation" },
      h("p", { class: "tool-line" }, h("strong", {}, serverOf(ask)), " asks you to open this page:"),
      h("p", { class: "elicitation-url-line" }, shown),
      h(
        "p",
        { class: "card-hint" },
        isWebUrl(url)
          ? "Check the address before you open it: it opens in a new tab only when you click it. "
          : "This is not a web address, so it cannot be opened from here. ",
        `${labels.confirm} tells ${serverOf(ask)} you agree to go on; it opens nothing.`,
      ),
      card.errorSlot("content"),
      card.actions(yes, no),
    );
  },
  summary: confirm.summary,
};

/** The renderer of an elicitation ask, by its mode and kind. */
export function elicitation(ask) {
  if (ask.elicitation && ask.elicitation.mode === "url") return elicitationUrl;
  return ask.kind === "form" ? elicitationForm : elicitationConfirm;
}
