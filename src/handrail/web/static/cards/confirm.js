// confirm: approve and deny buttons (destructive styling when the ask says so), Skip only when
// allowDecline is true. Two asks the server makes are confirms too:
// - approval (origin "approval"): the tool that waits, and how wide the yes is (this call, this
//   conversation, always for this tool -> content.scope); destructive for consequential tools;
// - confirmation (origin "confirmation"): the prepared request's `preview` as a table, a live
//   countdown to `expiresAt`, and an expired state whose confirm button is disabled.
// Both offer "Deny with a note": a short reason (at most 200 characters) sent as
// {action: "cancel", reason}, which the model reads and the answered card shows.

import { clock, h, humanize, json, uid } from "../dom.js";
import { button, optionRow } from "./card.js";
import { editThenApprove, mayApprove, quorumLine } from "./steer.js";

export function confirmLabels(input) {
  return {
    confirm: (input.confirmLabel || "").trim() || "Confirm",
    deny: (input.denyLabel || "").trim() || "Cancel",
  };
}

function confirmed(response) {
  return Boolean(response && response.content && response.content.confirmed === true);
}

function answerButtons(ask, card, { destructive, extra = () => ({}), lockConfirm = false } = {}) {
  const labels = confirmLabels(ask.input);
  const yes = button(labels.confirm, {
    variant: destructive ? "danger" : "primary",
    dataset: { action: "confirm", locked: lockConfirm ? "true" : "false" },
    disabled: lockConfirm,
    onClick: () => card.submit({ action: "accept", content: { confirmed: true, ...extra() } }),
  });
  const no = button(labels.deny, {
    variant: "secondary",
    dataset: { action: "deny" },
    onClick: () => card.submit({ action: "accept", content: { confirmed: false } }),
  });
  const skip = ask.input.allowDecline === true ? card.skipButton() : null;
  return { yes, no, row: card.actions(yes, no, skip) };
}

/** REASON_MAX: a cancel's reason is at most 200 UTF-16 code units (maxlength counts the same). */
const REASON_MAX = 200;

/** "Deny with a note": a disclosure with a text box; sending it denies with that reason. */
export function denyWithNote(card) {
  const id = uid("note");
  const text = h("textarea", {
    id,
    class: "input deny-note-text",
    rows: 2,
    maxlength: REASON_MAX,
    oninput: () => card.clearErrors(),
  });
  const send = button("Deny with this note", {
    variant: "secondary",
    dataset: { action: "deny-note" },
    onClick: () => {
      const reason = text.value.trim();
      if (!reason) {
        card.showErrors([{ path: "reason", message: "Write a note first,", fix: "or press the deny button." }]);
        return;
      }
      card.submit({ action: "cancel", reason });
    },
  });
  return h(
    "details",
    { class: "deny-note" },
    h("summary", {}, "Deny with a note"),
    h(
      "div",
      { class: "field" },
      h("label", { for: id }, `Tell the agent why (at most ${REASON_MAX} characters)`),
      text,
      card.errorSlot("reason", text),
    ),
    h("div", { class: "card-actions" }, send),
  );
}

export const confirm = {
  name: "confirm",
  label: () => "Confirm",
  title: (ask) => ask.input.title || "Please confirm",
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const { row } = answerButtons(ask, card, { destructive: ask.input.destructive === true });
    return h("div", { class: "ask-form" }, card.errorSlot("content"), row);
  },
  summary(ask, response) {
    const labels = confirmLabels(ask.input);
    return confirmed(response)
      ? h("p", { class: "summary-line" }, "Confirmed: ", h("strong", {}, labels.confirm))
      : h("p", { class: "summary-line" }, "Denied: ", h("strong", {}, labels.deny));
  },
};

const SCOPES = [
  { id: "once", label: "This call only", description: "Ask again next time." },
  { id: "conversation", label: "This conversation", description: "Don't ask again in this conversation." },
  { id: "always", label: "Always for this tool", description: "Don't ask again; revoke it on the Grants page." },
];

function heldCallLine(ask, card) {
  const held = card.ctx.heldCall ? card.ctx.heldCall(ask) : null;
  return h(
    "p",
    { class: "tool-line" },
    "Tool: ",
    h("code", {}, ask.toolName || "a tool"),
    held && held.args && Object.keys(held.args).length
      ? [" with ", h("code", {}, json(held.args))]
      : null,
  );
}

export const approval = {
  name: "approval",
  label: () => "Approval",
  title: (ask) => ask.input.title || `Allow ${ask.toolName || "this tool"}?`,
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const safety = card.ctx.safetyClass ? card.ctx.safetyClass(ask.toolName) : null;
    const destructive = ask.input.destructive === true || safety === "consequential";
    const name = uid("scope");
    const radios = SCOPES.map((scope, index) =>
      optionRow({
        type: "radio",
        name,
        value: scope.id,
        label: scope.label,
        description: scope.description,
        checked: index === 0,
        extraClass: "option-compact",
      }),
    ).map(({ row, box }) => ({ row, radio: box }));
    // A call with approvers is approved once each time, by them: no scope; the owner who is
    // no approver may only deny it.
    const withApprovers = Boolean(ask.approvers && ask.approvers.length);
    const approver = mayApprove(ask, card.ctx.me);
    const scope = () => radios.find((r) => r.radio.checked)?.radio.value || "once";
    const extra = () => (withApprovers ? {} : { scope: scope() });
    const { yes, row } = answerButtons(ask, card, { destructive, extra });
    if (!approver) yes.hidden = true;
    card.fieldset = withApprovers
      ? null
      : h("fieldset", { class: "scopes" }, h("legend", {}, "If you allow it, allow"), radios.map((r) => r.row));
    const held = card.ctx.heldCall ? card.ctx.heldCall(ask) : null;
    return h(
      "div",
      { class: "ask-form" },
      heldCallLine(ask, card),
      quorumLine(ask),
      safety ? h("p", { class: "card-hint" }, `Safety class: ${safety}.`) : null,
      card.fieldset,
      withApprovers ? null : card.errorSlot("content.scope", radios.map((r) => r.radio)),
      card.errorSlot("content"),
      row,
      approver && !withApprovers ? editThenApprove(card, held && held.args, { extra }) : null,
      denyWithNote(card),
    );
  },
  summary(ask, response) {
    if (!confirmed(response)) {
      return h("p", { class: "summary-line" }, "Denied: ", h("code", {}, ask.toolName || "the tool"), " did not run");
    }
    const scope = SCOPES.find((s) => s.id === (response.content.scope || "once"));
    const edited = response.content.arguments;
    return h(
      "div",
      {},
      h(
        "p",
        { class: "summary-line" },
        "Approved ",
        h("code", {}, ask.toolName || "the tool"),
        ": ",
        h("strong", {}, scope ? scope.label.toLowerCase() : "this call only"),
      ),
      edited && typeof edited === "object"
        ? h("div", { class: "edited-args" }, h("p", { class: "summary-line" }, "With your changes:"), previewTable(edited))
        : null,
    );
  },
};

function previewValue(value) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "none");
  if (value === "") return h("span", { class: "muted" }, "empty");
  if (Array.isArray(value)) {
    if (value.every((v) => v === null || typeof v !== "object")) return value.join(", ");
    return h("ul", { class: "plain" }, value.map((v) => h("li", {}, previewValue(v))));
  }
  if (typeof value === "object") return previewTable(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

/** An object as a two-column table (nested objects as nested tables). */
export function previewTable(object) {
  return h(
    "table",
    { class: "preview" },
    h(
      "tbody",
      {},
      Object.entries(object).map(([key, value]) =>
        h("tr", {}, h("th", { scope: "row" }, humanize(key)), h("td", {}, previewValue(value))),
      ),
    ),
  );
}

function remaining(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return hours ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

export const confirmation = {
  name: "confirmation",
  label: () => "Confirmation",
  title: (ask) => ask.input.title || "Confirm this request",
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const expires = Date.parse(ask.expiresAt || "");
    const hasExpiry = !Number.isNaN(expires);
    const expired = () => hasExpiry && Date.now() >= expires;
    const { yes, row } = answerButtons(ask, card, {
      destructive: ask.input.destructive === true,
      lockConfirm: expired(),
    });
    const approver = mayApprove(ask, card.ctx.me);
    if (!approver) yes.hidden = true;
    const countdown = h("p", { class: "countdown", role: "timer", "aria-live": "off" });
    const expiredNote = h("p", { class: "expired-note", role: "alert", hidden: true });
    function tick() {
      if (!hasExpiry) {
        countdown.textContent = "";
        return;
      }
      if (expired()) {
        countdown.textContent = `Expired at ${clock(ask.expiresAt)}.`;
        card.el.classList.add("card-expired");
        expiredNote.textContent =
          "This request expired and can no longer be confirmed. Ask the agent to prepare it again.";
        expiredNote.hidden = false;
        yes.dataset.locked = "true";
        yes.disabled = true;
        return true;
      }
      countdown.textContent = `Expires in ${remaining(expires - Date.now())} (at ${clock(ask.expiresAt)}).`;
      return false;
    }
    if (!tick()) {
      const timer = setInterval(() => {
        if (tick()) clearInterval(timer);
      }, 1000);
      card.onDispose(() => clearInterval(timer));
    }
    const preview = ask.preview && typeof ask.preview === "object"
      ? previewTable(ask.preview)
      : h("p", { class: "muted" }, "No preview was sent with this request.");
    return h(
      "div",
      { class: "ask-form" },
      h("div", { class: "preview-wrap", role: "group", "aria-label": "What will be sent" }, preview),
      quorumLine(ask),
      countdown,
      expiredNote,
      card.errorSlot("content"),
      row,
      approver && ask.preview && !(ask.approvers && ask.approvers.length)
        ? editThenApprove(card, ask.preview, { label: "Prepare it again with these values" })
        : null,
      denyWithNote(card),
    );
  },
  summary(ask, response) {
    // An answered confirmation keeps showing what was confirmed (or what was not sent).
    const labels = confirmLabels(ask.input);
    const what = ask.preview && typeof ask.preview === "object" ? previewTable(ask.preview) : null;
    if (confirmed(response) && response.content.arguments) {
      return h("div", {}, h("p", { class: "summary-line" }, "Edited: prepared again with your values, to confirm anew"), what);
    }
    return confirmed(response)
      ? h("div", {}, h("p", { class: "summary-line" }, "Confirmed: ", h("strong", {}, labels.confirm)), what)
      : h("div", {}, h("p", { class: "summary-line" }, "Not sent: ", h("strong", {}, labels.deny)), what);
  },
};
