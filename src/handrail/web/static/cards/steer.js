// Steering an approval: "Edit, then approve" (the held call's arguments as fields; sent as
// content.arguments with the approval, checked by the server, whose 400 errors land under the
// field they name: content.arguments.<name>), and the quorum line of a call that names
// approvers (who must approve, how many, who did so far).

import { h, humanize, json, uid } from "../dom.js";
import { button } from "./card.js";

/** A value typed like `original` from what the person wrote in its field. */
function typed(original, input) {
  if (typeof original === "boolean") return input.checked;
  const text = input.value;
  if (typeof original === "number") {
    const number = Number(text);
    return text.trim() === "" || Number.isNaN(number) ? text : number;
  }
  if (original !== null && typeof original === "object") {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** "Edit, then approve": a disclosure with one field per argument of the held call and a
 * button that approves with the edited values (`extra()` adds the rest of the content). */
export function editThenApprove(card, args, { label = "Approve with these values", extra = () => ({}) } = {}) {
  if (!args || typeof args !== "object" || !Object.keys(args).length) return null;
  const fields = Object.entries(args).map(([name, value]) => {
    const id = uid("arg");
    const input =
      typeof value === "boolean"
        ? h("input", { id, type: "checkbox", class: "edit-arg", checked: value, dataset: { arg: name } })
        : value !== null && typeof value === "object"
          ? h("textarea", { id, class: "input edit-arg", rows: 3, dataset: { arg: name } }, json(value))
          : h("input", {
              id,
              class: "input edit-arg",
              type: typeof value === "number" ? "number" : "text",
              value: String(value ?? ""),
              dataset: { arg: name },
              oninput: () => card.clearErrors(),
            });
    return {
      name,
      value,
      input,
      el: h(
        "div",
        { class: "field" },
        h("label", { for: id }, humanize(name)),
        input,
        card.errorSlot(`content.arguments.${name}`, input),
      ),
    };
  });
  const send = button(label, {
    variant: "primary",
    dataset: { action: "approve-edited" },
    onClick: () => {
      const edited = {};
      for (const f of fields) edited[f.name] = typed(f.value, f.input);
      card.submit({ action: "accept", content: { confirmed: true, arguments: edited, ...extra() } });
    },
  });
  return h(
    "details",
    { class: "edit-args" },
    h("summary", {}, "Edit, then approve"),
    fields.map((f) => f.el),
    card.errorSlot("content.arguments"),
    h("div", { class: "card-actions" }, send),
  );
}

/** Whether `me` ({id, isAdmin}) may approve an ask that names approvers. */
export function mayApprove(ask, me) {
  const names = ask.approvers || [];
  if (!names.length) return true;
  if (!me) return false;
  return names.includes(me.id) || (me.isAdmin === true && names.includes("admins"));
}

/** The quorum line of an ask with approvers, or null: "Needs 2 approvals from bob, admins.
 * Approved so far: bob." */
export function quorumLine(ask) {
  const names = ask.approvers || [];
  if (!names.length) return null;
  const quorum = ask.quorum || 1;
  const done = (ask.approvedBy || []).map((a) => a.userId);
  return h(
    "p",
    { class: "quorum-line", dataset: { approved: String(done.length), quorum: String(quorum) } },
    `Needs ${quorum} approval${quorum === 1 ? "" : "s"} from ${names.join(", ")}. `,
    done.length ? `Approved so far (${done.length} of ${quorum}): ${done.join(", ")}.` : "No approvals yet.",
  );
}
