// Who must approve a saved connection's tools' calls: its `approvals` setting, for every tool
// and per tool (PATCH /connections/{id} with {approvals}). Admins edit it in one form: "For"
// picks every tool or one tool, then the approvers (user ids, or "admins" for every admin), how
// many must approve, and after how many minutes the call expires and a reminder goes out. A
// mistake comes back as the server's 400 and shows under the field it names; nothing is saved.
// `rulesText` says a tool's rules in words, for the tools table.

import { api } from "./api.js";
import { h, uid, words } from "./dom.js";

const FIELD_LABELS = {
  approvers: "Approvers",
  quorum: "How many must approve",
  expiresAfter: "Expires after",
  remindAfter: "Remind after",
  tools: "Tools",
};

function minutes(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const value = seconds / 60;
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function duration(seconds) {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60) return `${Math.round(seconds / 60)} min`;
  return `${seconds} s`;
}

/** A tool's rules ({approvers, quorum, expiresAfter, remindAfter} or null) in words. */
export function rulesText(rules) {
  if (!rules) return "No approvers named";
  const parts = [];
  if (rules.approvers && rules.approvers.length) {
    const names = rules.approvers.map((a) => (a === "admins" ? "any admin" : a));
    parts.push(rules.quorum > 1 ? `${rules.quorum} of ${words(names)}` : words(names, "or"));
  } else {
    parts.push("No approvers named");
  }
  if (rules.expiresAfter) parts.push(`expires after ${duration(rules.expiresAfter)}`);
  if (rules.remindAfter) parts.push(`reminder after ${duration(rules.remindAfter)}`);
  return parts.join(" · ");
}

/** The approvals editor of a saved connection (admins). */
export function approvalsEditor(connection, tools, { onSaved, say }) {
  const setting = connection.approvals || {};
  const ids = { for: uid("appr-for"), who: uid("appr-who"), quorum: uid("appr-quorum"), expires: uid("appr-expires"), remind: uid("appr-remind") };
  const target = h(
    "select",
    { id: ids.for, class: "input", onchange: fill },
    h("option", { value: "" }, "Every tool"),
    tools.map((tool) => h("option", { value: tool.name }, tool.title ? `${tool.title} (${tool.name})` : tool.name)),
  );
  const who = h("input", { id: ids.who, class: "input", type: "text", placeholder: "bob, carol, admins", autocomplete: "off" });
  const quorum = h("input", { id: ids.quorum, class: "input", type: "number", min: "1", step: "1", placeholder: "1" });
  const expires = h("input", { id: ids.expires, class: "input", type: "number", min: "0", step: "any", placeholder: "never" });
  const remind = h("input", { id: ids.remind, class: "input", type: "number", min: "0", step: "any", placeholder: "never" });
  const errors = h("ul", { class: "approvals-errors", role: "alert" });
  const inputs = { approvers: who, quorum, expiresAfter: expires, remindAfter: remind };

  function part() {
    if (!target.value) return setting;
    return (setting.tools && setting.tools[target.value]) || {};
  }

  function fill() {
    const values = part();
    who.value = (values.approvers || []).join(", ");
    quorum.value = values.quorum ? String(values.quorum) : "";
    expires.value = minutes(values.expiresAfter);
    remind.value = minutes(values.remindAfter);
    errors.replaceChildren();
    for (const input of Object.values(inputs)) input.removeAttribute("aria-invalid");
  }

  function read() {
    const out = {};
    const names = who.value.split(/[\s,]+/).filter(Boolean);
    if (names.length) out.approvers = names;
    if (quorum.value) out.quorum = Number(quorum.value);
    if (expires.value) out.expiresAfter = Math.round(Number(expires.value) * 60);
    if (remind.value) out.remindAfter = Math.round(Number(remind.value) * 60);
    return out;
  }

  function showErrors(error) {
    errors.replaceChildren();
    const fields = error.problem && error.problem.fields && !Array.isArray(error.problem.fields) ? error.problem.fields : {};
    const entries = Object.entries(fields);
    if (!entries.length) {
      errors.append(h("li", {}, error.message));
      return;
    }
    for (const [path, message] of entries) {
      const key = path.split(".").pop();
      const label = FIELD_LABELS[key] || (path.startsWith("approvals.tools.") ? `The tool ${path.split(".")[2]}` : key);
      if (inputs[key]) inputs[key].setAttribute("aria-invalid", "true");
      errors.append(h("li", { dataset: { field: path } }, `${label}: ${message}.`));
    }
  }

  async function save(values) {
    const next = { ...setting };
    const tools = { ...(setting.tools || {}) };
    if (target.value) {
      if (Object.keys(values).length) tools[target.value] = values;
      else delete tools[target.value];
      delete next.tools;
    } else {
      for (const key of Object.keys(FIELD_LABELS)) delete next[key];
      Object.assign(next, values);
    }
    if (Object.keys(tools).length) next.tools = tools;
    const body = { approvals: Object.keys(next).length ? next : null };
    try {
      await api("PATCH", `/connections/${connection.id}`, body);
    } catch (error) {
      showErrors(error);
      say(error.message);
      return;
    }
    say(`Saved the approvers of ${target.value || connection.name}.`);
    onSaved();
  }

  const field = (id, label, input, hint) => h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("p", { class: "helper" }, hint) : null);
  const form = h(
    "form",
    {
      class: "approvals-form",
      onsubmit: (event) => {
        event.preventDefault();
        save(read());
      },
    },
    field(ids.for, "For", target, "A tool's own approvers go over the ones for every tool."),
    field(ids.who, "Approvers", who, "User ids, separated by commas; admins means any admin. Empty: none are named, so the person in the conversation answers its approvals."),
    field(ids.quorum, "How many must approve", quorum),
    field(ids.expires, "Expires after (minutes)", expires),
    field(ids.remind, "Remind after (minutes)", remind),
    errors,
    h(
      "div",
      { class: "button-row" },
      h("button", { class: "btn btn-primary btn-small", type: "submit" }, "Save approvers"),
      h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: () => save({}) }, "Clear"),
    ),
  );
  fill();
  return h("details", { class: "approvals-editor" }, h("summary", {}, "Approvers"), form);
}
