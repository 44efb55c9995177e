// markdown: an editor with a live preview (the safe renderer), a length counter against the
// ask's bounds, and `changed` computed against `initial` ("" when the ask has none).

import { h, uid } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { button } from "./card.js";

const MAX = 20000;

function bounds(input) {
  return {
    min: Number.isInteger(input.minLength) ? input.minLength : 0,
    max: Number.isInteger(input.maxLength) ? input.maxLength : MAX,
  };
}

export const markdown = {
  name: "markdown",
  label: () => "Edit",
  title: (ask) => ask.input.title || "Edit the draft",
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const input = ask.input;
    const initial = typeof input.initial === "string" ? input.initial : "";
    const { min, max } = bounds(input);
    const id = uid("draft");
    const counter = h("p", { class: "counter", id: uid("counter"), "aria-live": "polite" });
    const editor = h("textarea", {
      id,
      class: "input editor",
      rows: Math.min(16, Math.max(6, initial.split("\n").length + 2)),
      placeholder: input.placeholder,
      spellcheck: "true",
      "aria-describedby": counter.id,
      value: initial,
    });
    const preview = h("div", { class: "md-preview markdown-body" });
    const previewId = uid("preview");
    const changedNote = h("span", { class: "changed-note" });
    const submit = button(input.submitLabel || "Submit", { variant: "primary", type: "submit" });
    submit.setAttribute("aria-describedby", counter.id);
    function update() {
      const text = editor.value;
      preview.replaceChildren(
        text.trim() ? renderMarkdown(text) : h("p", { class: "muted" }, "Nothing to preview yet."),
      );
      const length = text.length;
      const trimmed = text.trim().length;
      const over = length > max;
      const under = trimmed < min;
      counter.textContent =
        `${length} / ${max} characters` + (min ? ` (at least ${min})` : "") +
        (over ? ` — ${length - max} too many.` : under ? ` — ${min - trimmed} more needed.` : ".");
      counter.classList.toggle("counter-bad", over || under);
      // A draft out of bounds cannot be sent; the counter says by how much.
      submit.disabled = over || under;
      submit.dataset.locked = String(over || under);
      changedNote.textContent = text === initial ? "Unchanged draft" : "Edited";
    }
    let pending = 0;
    editor.addEventListener("input", () => {
      // An error the server gave is about the text as it was: editing clears it.
      card.clearErrors();
      cancelAnimationFrame(pending);
      pending = requestAnimationFrame(update);
    });
    update();
    const allowDecline = input.allowDecline !== false;
    return card.form(
      [
        h(
          "div",
          { class: "md-grid" },
          h(
            "div",
            { class: "field" },
            h("label", { for: id }, "Draft (markdown)"),
            editor,
            counter,
            card.errorSlot("content.markdown", editor),
          ),
          h(
            "section",
            { class: "field", "aria-labelledby": previewId },
            h(`h${Math.min(6, card.level + 1)}`, { class: "preview-heading", id: previewId }, "Preview"),
            preview,
          ),
        ),
        card.errorSlot("content", editor),
        card.actions(
          submit,
          allowDecline ? card.skipButton() : null,
          changedNote,
        ),
      ],
      () => {
        const text = editor.value;
        card.submit({ action: "accept", content: { markdown: text, changed: text !== initial } });
      },
    );
  },
  summary(ask, response) {
    const content = (response && response.content) || {};
    return h(
      "div",
      {},
      h("p", { class: "summary-line" }, content.changed ? "Sent back an edited draft" : "Approved the draft as is"),
      typeof content.markdown === "string"
        ? h(
            "details",
            { class: "summary-details" },
            h("summary", {}, "Show the draft"),
            h("div", { class: "markdown-body" }, renderMarkdown(content.markdown)),
          )
        : null,
    );
  },
};
