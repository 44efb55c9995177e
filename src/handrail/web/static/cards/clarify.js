// clarify (appwrite.clarify/v1): every prompt of the envelope in one form, in order. A choice
// prompt is radio buttons (checkboxes with allowMultiple), a confirm prompt two answers (the
// confirm one destructive when `danger`), a text prompt an input (a textarea when multiline).
// Unknown prompt kinds are skipped. The answer is {protocol, answers: [...]}.

import { h, uid, words } from "../dom.js";
import { button, optionRow } from "./card.js";

export const PROTOCOL = "appwrite.clarify/v1";
const KINDS = new Set(["choice", "confirm", "text"]);

/** The envelope of a clarify ask: the pending ask's input, or a call row's raw arguments
 * (prompts as a JSON string, one object, or an array). */
export function clarifyEnvelope(input) {
  if (input && input.protocol === PROTOCOL && Array.isArray(input.prompts)) return input;
  let prompts = input ? input.prompts : [];
  if (typeof prompts === "string") {
    try {
      prompts = JSON.parse(prompts);
    } catch {
      prompts = [];
    }
  }
  if (prompts && !Array.isArray(prompts)) prompts = [prompts];
  return { protocol: PROTOCOL, title: input && input.title, prompts: prompts || [] };
}

function required(prompt) {
  return prompt.required !== false;
}

function mark(prompt) {
  return required(prompt)
    ? [h("span", { class: "required", "aria-hidden": "true" }, " *"), h("span", { class: "sr-only" }, " (required)")]
    : h("span", { class: "optional" }, " (optional)");
}

function buildPrompt(prompt, card) {
  const hint = prompt.hint ? h("p", { class: "helper", id: uid("hint"), dir: "auto" }, prompt.hint) : null;
  const error = h("p", { class: "field-error", id: uid("error"), hidden: true });
  if (prompt.kind === "text") {
    const id = uid("clarify-text");
    const control = h(prompt.multiline ? "textarea" : "input", {
      id,
      class: "input",
      type: prompt.multiline ? null : "text",
      rows: prompt.multiline ? 4 : null,
      placeholder: prompt.placeholder,
      required: required(prompt),
      "aria-describedby": [hint && hint.id, error.id].filter(Boolean).join(" "),
      value: prompt.defaultValue ?? "",
    });
    return {
      prompt,
      controls: [control],
      error,
      node: h("div", { class: "field" }, h("label", { for: id, class: "field-label", dir: "auto" }, prompt.question, mark(prompt)), hint, control, error),
      read: () => (control.value.trim() ? { value: control.value } : null),
    };
  }
  const name = uid("clarify");
  let options;
  if (prompt.kind === "confirm") {
    options = [
      { id: "yes", label: prompt.confirmLabel || "Confirm", danger: prompt.danger === true },
      { id: "no", label: prompt.cancelLabel || "Cancel" },
    ];
  } else {
    options = prompt.options || [];
  }
  const multiple = prompt.kind === "choice" && prompt.allowMultiple === true;
  const boxes = [];
  const rows = options.map((option) => {
    const { row, box } = optionRow({
      type: multiple ? "checkbox" : "radio",
      name,
      value: option.id,
      label: option.label,
      description: option.description,
      extraClass: `${prompt.kind === "confirm" ? "option-segment" : ""}${option.danger ? " option-danger" : ""}`,
    });
    boxes.push(box);
    return row;
  });
  const fieldset = h(
    "fieldset",
    {
      class: `field field-group${prompt.kind === "confirm" ? " segments" : ""}`,
      "aria-describedby": [hint && hint.id, error.id].filter(Boolean).join(" "),
    },
    h("legend", { class: "field-label", dir: "auto" }, prompt.question, mark(prompt)),
    hint,
    h("div", { class: prompt.kind === "confirm" ? "segment-row" : "option-list" }, rows),
    error,
  );
  const read = () => {
    const checked = boxes.filter((b) => b.checked).map((b) => b.value);
    if (!checked.length) return null;
    if (prompt.kind === "confirm") return { confirmed: checked[0] === "yes" };
    return { values: checked };
  };
  return { prompt, controls: boxes, error, node: fieldset, read };
}

export const clarify = {
  name: "clarify",
  label: () => "Clarify",
  title: (ask) => clarifyEnvelope(ask.input).title || "A few questions",
  prompt: (ask) => {
    const count = clarifyEnvelope(ask.input).prompts.filter((p) => KINDS.has(p.kind)).length;
    return count > 1 ? `The agent needs ${count} answers before it continues.` : "The agent needs an answer before it continues.";
  },
  controls(ask, card) {
    const envelope = clarifyEnvelope(ask.input);
    const items = envelope.prompts.filter((p) => KINDS.has(p.kind)).map((p) => buildPrompt(p, card));
    // Server errors name answers by index (content.answers[2].value): the slots follow the
    // answers of the last submit.
    const general = card.errorSlot("content");
    const listSlot = card.errorSlot("content.answers");
    function bindSlots(answered) {
      answered.forEach((item, index) => {
        card.slots.set(`content.answers[${index}]`, { el: item.error, controls: item.controls });
      });
    }
    return card.form(
      [
        items.map((item) => item.node),
        listSlot,
        general,
        card.actions(
          button("Send answers", { variant: "primary", type: "submit" }),
          card.skipButton(),
        ),
      ],
      () => {
        const answers = [];
        const answered = [];
        const missing = [];
        for (const item of items) {
          const value = item.read();
          if (value) {
            answers.push({ id: item.prompt.id, kind: item.prompt.kind, ...value });
            answered.push(item);
          } else if (required(item.prompt)) missing.push(item);
        }
        card.clearErrors();
        for (const item of items) {
          item.error.hidden = true;
          item.error.textContent = "";
          for (const c of item.controls) c.removeAttribute("aria-invalid");
        }
        if (missing.length) {
          for (const item of missing) {
            item.error.textContent = "Answer this question.";
            item.error.hidden = false;
            for (const c of item.controls) c.setAttribute("aria-invalid", "true");
          }
          missing[0].controls[0].focus();
          return;
        }
        bindSlots(answered);
        card.submit({ action: "accept", content: { protocol: PROTOCOL, answers } });
      },
    );
  },
  summary(ask, response) {
    const envelope = clarifyEnvelope(ask.input);
    const answers = (response && response.content && response.content.answers) || [];
    const byId = new Map(answers.map((a) => [a.id, a]));
    return h(
      "div",
      {},
      h("p", { class: "summary-line" }, "Answered"),
      h(
        "dl",
        { class: "summary-values" },
        envelope.prompts.filter((p) => KINDS.has(p.kind)).map((prompt) => {
          const answer = byId.get(prompt.id);
          let shown = "—";
          if (answer && prompt.kind === "text") shown = answer.value;
          if (answer && prompt.kind === "confirm") shown = answer.confirmed ? prompt.confirmLabel || "Confirm" : prompt.cancelLabel || "Cancel";
          if (answer && prompt.kind === "choice") {
            const labels = new Map((prompt.options || []).map((o) => [o.id, o.label]));
            shown = words((answer.values || []).map((v) => labels.get(v) || v));
          }
          return [h("dt", {}, prompt.question), h("dd", {}, shown)];
        }),
      ),
    );
  },
};
