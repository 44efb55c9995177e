// The simple card: title, text, up to three buttons each holding the answer it sends, and the
// hand-off line when the full app is needed. /watch shows every pending ask this way, and the
// chat uses it for an ask kind it does not know.

import { h } from "../dom.js";
import { button } from "./card.js";

const HANDOFF = {
  markdown: "Edit on your phone",
  form: "Fill it in on your phone",
  files: "Upload on your phone",
};

/** The hand-off line of a card: what the person does in the full app. */
export function handoffText(kind) {
  return HANDOFF[kind] || "Continue on your phone";
}

const VARIANTS = { primary: "primary", destructive: "danger", cancel: "ghost", default: "secondary" };

/**
 * A simple card as an element. `onButton(button)` is called with the tapped button;
 * `handoffHref` makes the hand-off line a link to the full app.
 */
export function simpleCard(card, { onButton, handoffHref, headingLevel = "h2", extra = null } = {}) {
  const buttons = (card.buttons || []).slice(0, 3).map((b) =>
    button(b.label, {
      variant: VARIANTS[b.style] || "secondary",
      dataset: { buttonId: b.id, style: b.style },
      onClick: () => onButton && onButton(b),
    }),
  );
  const handoff = card.handoff
    ? h(
        "p",
        { class: "handoff" },
        handoffHref ? h("a", { href: handoffHref, "data-link": "" }, handoffText(card.kind)) : handoffText(card.kind),
      )
    : null;
  return h(
    "article",
    { class: "simple-card", dataset: { kind: card.kind, toolCallId: card.toolCallId } },
    card.title ? h(headingLevel, { class: "simple-title", dir: "auto" }, card.title) : null,
    h("p", { class: "simple-text", dir: "auto" }, card.text),
    buttons.length ? h("div", { class: "simple-buttons" }, buttons) : null,
    handoff,
    extra,
  );
}

/** The chat's renderer for an ask kind it does not know: the card's buttons. */
export const unknown = {
  name: "simple",
  label: (ask) => ask.kind,
  title: (ask) => (ask.simple && ask.simple.title) || (ask.input && ask.input.title) || "A question",
  prompt: (ask) => (ask.simple && ask.simple.text) || (ask.input && ask.input.prompt) || "",
  controls(ask, card) {
    const buttons = ((ask.simple && ask.simple.buttons) || []).map((b) =>
      button(b.label, {
        variant: VARIANTS[b.style] || "secondary",
        onClick: () => card.submit({ ...b.response }),
      }),
    );
    return h(
      "div",
      { class: "ask-form" },
      card.errorSlot("content"),
      buttons.length ? card.actions(...buttons) : h("p", { class: "muted" }, "This client cannot show this ask."),
    );
  },
  summary: () => h("p", { class: "summary-line" }, "Answered"),
};
