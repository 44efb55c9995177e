// The frame every ask card shares: heading, prompt, the kind's controls while the ask is
// pending, a summary once it is answered, declined or cancelled, and errors from a 400 answer
// shown under the field they name (by the error's `path`, such as content.values.seats).

import { append, h, replace, uid } from "../dom.js";
import { renderMarkdown } from "../markdown.js";

const CANCEL_REASONS = {
  user_sent_message: "Cancelled: a new message was sent",
  one_ask_at_a_time: "Cancelled: the agent asked something else at the same time",
  user_cancelled: "Cancelled",
  expired: "Expired: nothing ran",
  edited: "Edited: prepared again",
  stopped: "Cancelled: you stopped the turn",
  invalid_ask: "Cancelled: the agent's question could not be shown",
};

/** Why a call did not run, in words, for each reason code the server gives (the reason of an
 * execution-denied result, of a cancel). */
const REASON_WORDS = {
  denied: "denied",
  user_denied: "you denied it",
  user_declined: "you skipped it",
  user_cancelled: "cancelled",
  user_sent_message: "a new message was sent",
  one_ask_at_a_time: "the agent asked something else at the same time",
  expired: "it expired",
  stopped: "you stopped the turn",
  edited: "prepared again with your changes",
  invalid_ask: "the agent's question could not be shown",
};

/** Whether `reason` is one of the server's codes (user_denied, expired, ...), not a note a
 * person wrote. */
export function isReasonCode(reason) {
  return typeof reason === "string" && (reason in REASON_WORDS || /^[a-z]+(_[a-z]+)+$/.test(reason.trim()));
}

/** A reason code in words ("you denied it"); a person's note as the note; never the code. */
export function reasonWords(reason) {
  const text = typeof reason === "string" ? reason.trim() : "";
  if (!text) return REASON_WORDS.denied;
  if (text in REASON_WORDS) return REASON_WORDS[text];
  if (isReasonCode(text)) return text.replace(/_/g, " ");
  return `denied with a note: “${text}”`;
}

/** A button: variant is primary, secondary, danger or ghost. */
export function button(label, { variant = "secondary", type = "button", onClick, ...attrs } = {}) {
  return h("button", { class: `btn btn-${variant}`, type, onclick: onClick, ...attrs }, label);
}

/** The status an answer envelope leaves its ask in. */
export function statusOf(response) {
  if (!response) return "pending";
  if (response.action === "decline") return "declined";
  if (response.action === "cancel") return "cancelled";
  return "answered";
}

/** The person's own note of a cancel ({action: "cancel", reason}), or null when the reason is
 * one of the server's codes (user_sent_message, expired, ...) or there is none. */
export function noteOf(response) {
  if (!response || response.action !== "cancel") return null;
  const reason = typeof response.reason === "string" ? response.reason.trim() : "";
  if (!reason || reason in CANCEL_REASONS || isReasonCode(reason)) return null;
  return reason;
}

/** The line a summary starts with for a decline or a cancel (null for accept). */
export function closedLine(response) {
  if (!response) return "Closed";
  if (response.action === "decline") return "Skipped";
  if (response.action === "cancel") return CANCEL_REASONS[response.reason] || "Cancelled";
  return null;
}

export class AskCard {
  /**
   * @param ask {toolCallId, kind, input, origin?, toolName?, simple?, preview?, expiresAt?,
   *   status: "pending"|"answered"|"cancelled", response?, actionable?}
   * @param ctx {answer(card, envelope), onConflict(card), safetyClass(toolName), heldCall(ask),
   *   headingLevel? (of the card's title: 2 by default, under the page's h1)}
   * @param renderer {name, label, title(ask), prompt(ask), controls(ask, card), summary(ask, response)}
   */
  constructor(ask, ctx, renderer) {
    this.ask = ask;
    this.ctx = ctx;
    this.renderer = renderer;
    this.slots = new Map();
    this.busy = false;
    this.lastEnvelope = null;
    this.disposers = [];
    this.titleId = uid("ask-title");
    // The title's heading level: one below the heading the card sits under (the page's h1 by
    // default; a section's h2 gives 3), so the page's outline has no gap.
    this.level = Math.min(6, Math.max(2, ctx.headingLevel || 2));
    this.el = h("article", {
      class: `card card-${renderer.name}`,
      "aria-labelledby": this.titleId,
      tabindex: "-1",
      dataset: { kind: ask.kind, toolCallId: ask.toolCallId, origin: ask.origin || "" },
    });
    this.render();
  }

  /** Move the keyboard focus to the card (its first control while it is pending). */
  focus() {
    const first = this.pending ? this.el.querySelector("input, textarea, select, button") : null;
    (first || this.el).focus({ preventScroll: true });
  }

  get toolCallId() {
    return this.ask.toolCallId;
  }

  get pending() {
    return this.ask.status === "pending";
  }

  /** Run `fn` when the card re-renders or leaves (timers, listeners). */
  onDispose(fn) {
    this.disposers.push(fn);
  }

  dispose() {
    for (const fn of this.disposers.splice(0)) fn();
  }

  render() {
    this.dispose();
    this.slots.clear();
    const { ask, renderer } = this;
    const status = ask.status === "pending" ? "pending" : statusOf(ask.response);
    this.el.dataset.status = status;
    this.el.classList.toggle("card-pending", status === "pending");
    const title = renderer.title(ask);
    const prompt = renderer.prompt(ask);
    const header = h(
      "header",
      { class: "card-header" },
      h("span", { class: `badge badge-${renderer.name}` }, renderer.label(ask)),
      h(`h${this.level}`, { class: "card-title", id: this.titleId, dir: "auto" }, title),
    );
    this.notice = h("div", { class: "card-notice", role: "alert", hidden: true });
    const parts = [header];
    // The prompt is markdown (the agent's words): rendered safely, as the chat renders replies.
    if (prompt) {
      parts.push(
        typeof prompt === "string"
          ? h("div", { class: "card-prompt markdown-body" }, renderMarkdown(prompt))
          : h("div", { class: "card-prompt" }, prompt),
      );
    }
    if (status === "pending" && ask.actionable !== false) {
      parts.push(renderer.controls(ask, this));
    } else if (status === "pending") {
      parts.push(h("p", { class: "card-waiting" }, "Waiting for an answer."));
    } else {
      parts.push(this.summary());
    }
    parts.push(this.notice);
    replace(this.el, parts);
  }

  summary() {
    const { ask } = this;
    const closed = closedLine(ask.response);
    const note = noteOf(ask.response);
    const body = note
      ? h(
          "p",
          { class: "summary-line" },
          ask.origin ? "Denied with a note: " : "Cancelled with a note: ",
          h("span", { class: "deny-note-shown" }, `“${note}”`),
        )
      : closed
        ? h("p", { class: "summary-line" }, closed)
        : this.renderer.summary(ask, ask.response);
    return h("div", { class: "card-summary", role: "status" }, body);
  }

  /** A <form novalidate> whose controls are all disabled while the answer is sent. */
  form(children, onSubmit) {
    this.fieldset = h("fieldset", { class: "ask-fieldset" }, children);
    return h(
      "form",
      {
        class: "ask-form",
        novalidate: true,
        onsubmit: (event) => {
          event.preventDefault();
          if (!this.busy) onSubmit(event);
        },
      },
      this.fieldset,
    );
  }

  /** The row of buttons at the bottom of a card. */
  actions(...buttons) {
    return h("div", { class: "card-actions" }, buttons);
  }

  /** A Skip button that declines the ask. */
  skipButton(label = "Skip") {
    return button(label, {
      variant: "ghost",
      onClick: () => this.submit({ action: "decline" }),
      dataset: { action: "skip" },
    });
  }

  /** A place for the errors of `path` (and the paths under it), tied to `control` for
   * assistive technology. Returns the element to put under the field. */
  errorSlot(path, control = null) {
    const el = h("p", { class: "field-error", id: uid("error"), hidden: true });
    const controls = control ? (Array.isArray(control) ? control : [control]) : [];
    for (const c of controls) {
      const described = c.getAttribute("aria-describedby");
      c.setAttribute("aria-describedby", described ? `${described} ${el.id}` : el.id);
    }
    this.slots.set(path, { el, controls });
    return el;
  }

  clearErrors() {
    for (const { el, controls } of this.slots.values()) {
      el.hidden = true;
      el.textContent = "";
      for (const c of controls) c.removeAttribute("aria-invalid");
    }
    this.notice.hidden = true;
    this.notice.replaceChildren();
  }

  slotFor(path) {
    let key = path;
    for (;;) {
      if (this.slots.has(key)) return this.slots.get(key);
      const cut = key.search(/(\[\d+\]|\.[^.[\]]+)$/);
      if (cut <= 0) return null;
      key = key.slice(0, cut);
    }
  }

  /** Show a 400 answer's field errors under their fields; the rest above the buttons. */
  showErrors(fields, fallback = "The answer was not accepted.") {
    this.clearErrors();
    const general = [];
    let first = null;
    for (const field of fields) {
      const text = [field.message, field.fix].filter(Boolean).join(" ");
      const slot = this.slotFor(String(field.path ?? ""));
      if (!slot) {
        general.push(text);
        continue;
      }
      append(slot.el, slot.el.textContent ? " " : "", text);
      slot.el.hidden = false;
      for (const c of slot.controls) c.setAttribute("aria-invalid", "true");
      first = first || slot.controls[0] || slot.el;
    }
    if (general.length || !fields.length) {
      this.showNotice(general.length ? general : [fallback]);
    }
    if (first && typeof first.focus === "function") first.focus();
  }

  showNotice(lines, tone = "error") {
    this.notice.className = `card-notice notice-${tone}`;
    replace(this.notice, [].concat(lines).map((line) => h("p", {}, line)));
    this.notice.hidden = false;
  }

  setBusy(busy) {
    this.busy = busy;
    this.el.setAttribute("aria-busy", busy ? "true" : "false");
    if (this.fieldset) this.fieldset.disabled = busy;
    for (const b of this.el.querySelectorAll(".card-actions button")) b.disabled = busy || b.dataset.locked === "true";
  }

  /** Send an answer: `envelope` is the answer envelope, or an async function that makes it
   * (files upload first). Errors stay on the card, and the ask stays open. */
  async submit(envelope) {
    if (this.busy) return;
    this.clearErrors();
    this.setBusy(true);
    try {
      const made = typeof envelope === "function" ? await envelope() : envelope;
      if (!made) {
        this.setBusy(false);
        return;
      }
      this.lastEnvelope = made;
      await this.ctx.answer(this, made);
      if (this.pending) this.setBusy(false);
    } catch (error) {
      this.setBusy(false);
      if (error && error.status === 409) {
        this.showNotice(
          "This ask was already answered elsewhere (another tab or device). Reloading the conversation…",
          "info",
        );
        this.ctx.onConflict(this);
      } else if (error && error.status === 400 && error.fieldErrors && error.fieldErrors.length) {
        this.showErrors(error.fieldErrors);
      } else if (error && Array.isArray(error.fields)) {
        this.showErrors(error.fields);
      } else {
        this.showNotice(error && error.message ? error.message : String(error));
      }
    }
  }

  /** The ask ended (askResolved, or a reload): show its summary. */
  resolve(response) {
    const hadFocus = this.el.contains(document.activeElement) || this.busy;
    this.ask.status = statusOf(response) === "cancelled" ? "cancelled" : "answered";
    this.ask.response = response;
    this.busy = false;
    this.el.removeAttribute("aria-busy");
    this.render();
    if (hadFocus) this.el.focus({ preventScroll: true });
  }
}

/** One selectable option: a radio button or checkbox whose accessible name is its label, with
 * the description tied to it (aria-describedby). A click anywhere on the row picks it.
 * Returns {row, box}. */
export function optionRow({ type, name, value, label, description, checked = false, onChange, extraClass = "" }) {
  const id = uid("option");
  const descriptionId = description ? uid("desc") : null;
  const box = h("input", { type, name, id, value, checked, "aria-describedby": descriptionId, onchange: onChange });
  const row = h(
    "div",
    {
      class: `option ${extraClass}`.trim(),
      // The row takes the label's direction (the label and the box inherit it): a label in a
      // right-to-left script puts the box on the right. (The description has its own.)
      dir: "auto",
      onclick: (event) => {
        if (event.target === box || event.target.closest("label") || box.disabled) return;
        if (type === "radio") box.checked = true;
        else box.checked = !box.checked;
        box.dispatchEvent(new Event("change", { bubbles: true }));
      },
    },
    box,
    h(
      "div",
      { class: "option-text" },
      h("label", { for: id, class: "option-label" }, label),
      description ? h("span", { class: "option-description", id: descriptionId, dir: "auto" }, description) : null,
    ),
  );
  return { row, box };
}
