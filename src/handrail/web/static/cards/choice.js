// choice: one option (radio buttons) or several (checkboxes, with an optional Other field),
// defaults preselected, and Submit enabled only while the selection holds min to max choices.
// The permission ask (origin "permission") is a choice of level, with each level's description.

import { h, uid, words } from "../dom.js";
import { button, optionRow } from "./card.js";

/** The {min, max} choices an answer must hold (choiceSelectionBounds). */
export function choiceBounds(input) {
  if (input.select !== "many") return { min: 1, max: 1 };
  const offered = (input.options || []).length + (input.allowOther ? 1 : 0);
  return {
    min: Number.isInteger(input.minSelected) ? input.minSelected : 1,
    max: Number.isInteger(input.maxSelected) ? input.maxSelected : offered,
  };
}

function boundsText({ min, max }, many) {
  if (!many) return "Pick one.";
  if (min === max) return `Pick ${min}.`;
  if (min === 0) return `Pick up to ${max}.`;
  if (max >= 50) return `Pick at least ${min}.`;
  return `Pick ${min} to ${max}.`;
}

export function choiceControls(ask, card, { submitLabel } = {}) {
  const input = ask.input;
  const many = input.select === "many";
  const bounds = choiceBounds(input);
  const defaults = new Set(input.default || []);
  const name = uid("choice");
  const legendId = uid("legend");
  const boxes = [];
  const options = (input.options || []).map((option) => {
    const { row, box } = optionRow({
      type: many ? "checkbox" : "radio",
      name,
      value: option.id,
      label: option.label,
      description: option.description,
      checked: defaults.has(option.id),
      onChange: update,
    });
    boxes.push(box);
    return row;
  });
  let other = null;
  let otherRow = null;
  if (many && input.allowOther) {
    const id = uid("other");
    other = h("input", {
      type: "text",
      id,
      class: "input",
      maxlength: 500,
      autocomplete: "off",
      oninput: update,
    });
    otherRow = h(
      "div",
      { class: "field other" },
      h("label", { for: id, dir: "auto" }, input.otherLabel || "Other"),
      other,
      card.errorSlot("content.other", other),
    );
  }
  const status = h("p", { class: "choice-status", id: uid("status"), "aria-live": "polite" });
  const submit = button(submitLabel || input.submitLabel || "Submit", {
    variant: "primary",
    type: "submit",
    "aria-describedby": status.id,
  });

  function selection() {
    const selected = boxes.filter((b) => b.checked).map((b) => b.value);
    const otherText = other ? other.value.trim() : "";
    return { selected, otherText, count: selected.length + (otherText ? 1 : 0) };
  }

  function update() {
    const { count } = selection();
    const ok = count >= bounds.min && count <= bounds.max;
    let text = boundsText(bounds, many);
    if (many) text += ` ${count} selected.`;
    if (count > bounds.max) text += ` Remove ${count - bounds.max} to continue.`;
    status.textContent = text;
    submit.dataset.locked = ok ? "false" : "true";
    submit.disabled = !ok || card.busy;
  }

  const fieldset = h(
    "fieldset",
    { class: "options", "aria-describedby": status.id },
    h("legend", { class: "sr-only", id: legendId }, input.prompt || "Options"),
    options,
  );
  const selectedError = card.errorSlot("content.selected", boxes);
  card.errorSlot("content", boxes);
  const allowDecline = input.allowDecline !== false;
  const form = card.form(
    [
      fieldset,
      otherRow,
      selectedError,
      status,
      card.actions(submit, allowDecline ? card.skipButton() : null),
    ],
    () => {
      const { selected, otherText, count } = selection();
      if (count < bounds.min || count > bounds.max) return;
      const content = { selected };
      if (otherText) content.other = otherText;
      card.submit({ action: "accept", content });
    },
  );
  update();
  return form;
}

export function choiceSummary(ask, response) {
  const content = (response && response.content) || {};
  const labels = new Map((ask.input.options || []).map((o) => [o.id, o.label]));
  const picked = (content.selected || []).map((id) => labels.get(id) || id);
  if (content.other) picked.push(`“${content.other}”`);
  return h(
    "p",
    { class: "summary-line" },
    picked.length ? ["Chose ", h("strong", {}, words(picked))] : "Chose nothing",
  );
}

export const choice = {
  name: "choice",
  label: (ask) => (ask.input.select === "many" ? "Choose" : "Choose one"),
  title: (ask) => ask.input.title || "A question",
  prompt: (ask) => ask.input.prompt,
  controls: (ask, card) => choiceControls(ask, card),
  summary: choiceSummary,
};

export const permission = {
  name: "permission",
  label: () => "Permission",
  title: (ask) => ask.input.title || "Allow these tools?",
  prompt: (ask) => ask.input.prompt,
  controls: (ask, card) =>
    h(
      "div",
      {},
      choiceControls(ask, card, { submitLabel: "Save and continue" }),
      h(
        "p",
        { class: "card-hint" },
        "You can change or forget this level later on the ",
        h("a", { href: "/grants", "data-link": "" }, "Grants"),
        " page.",
      ),
    ),
  summary: (ask, response) => {
    const content = (response && response.content) || {};
    const labels = new Map((ask.input.options || []).map((o) => [o.id, o.label]));
    const level = (content.selected || [])[0];
    return h(
      "p",
      { class: "summary-line" },
      "Level saved: ",
      h("strong", {}, labels.get(level) || level || "none"),
    );
  },
};

/** A selection (origin "selection"): the server asks which candidate an HTTP action should
 * use when several fit. A choice of one, naming the tool that waits. */
export const selection = {
  ...choice,
  name: "selection",
  label: () => "Selection",
  controls: (ask, card) =>
    h(
      "div",
      {},
      ask.toolName ? h("p", { class: "tool-line" }, "For ", h("code", {}, ask.toolName)) : null,
      choiceControls(ask, card),
    ),
};
