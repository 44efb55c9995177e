// form: one labelled input per field, for each of the twelve field types (text, textarea, email,
// url, phone, number, date, time, datetime with an offset, boolean switch, select,
// multiselect), with helper text and required marks. The server checks the values: its errors
// (content.values.<id>) show under their fields and the ask stays open.

import { h, json, uid, words } from "../dom.js";
import { button, optionRow } from "./card.js";

/** The offsets the datetime field offers, as "+HH:MM": every half hour from -12:00 to +14:00,
 * plus the quarter-hour zones, plus the browser's own. */
export function offsetChoices(extra = []) {
  const minutes = new Set([345, 525, 765, 825]);
  for (let m = -12 * 60; m <= 14 * 60; m += 30) minutes.add(m);
  for (const value of extra) minutes.add(value);
  return [...minutes].sort((a, b) => a - b).map(formatOffset);
}

export function formatOffset(totalMinutes) {
  const sign = totalMinutes < 0 ? "-" : "+";
  const abs = Math.abs(totalMinutes);
  return `${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

function parseOffset(text) {
  if (text === "Z") return 0;
  const match = /^([+-])(\d{2}):(\d{2})$/.exec(text);
  if (!match) return null;
  const value = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === "-" ? -value : value;
}

/** The browser's offset from UTC now, in minutes east of UTC. */
export function browserOffset() {
  return -new Date().getTimezoneOffset();
}

const DATETIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function labelFor(field, id) {
  return h(
    "label",
    { for: id, class: "field-label", dir: "auto" },
    field.label,
    field.required ? [h("span", { class: "required", "aria-hidden": "true" }, " *"), h("span", { class: "sr-only" }, " (required)")] : null,
  );
}

function helper(field) {
  return field.helperText ? h("p", { class: "helper", id: uid("help"), dir: "auto" }, field.helperText) : null;
}

function describe(control, ...nodes) {
  const ids = nodes.filter(Boolean).map((n) => n.id);
  if (ids.length) control.setAttribute("aria-describedby", ids.join(" "));
}

/** One field: {node, read(): [present, value], controls}. */
function buildField(field, card) {
  const id = uid(`field-${field.id}`);
  const help = helper(field);
  const base = { id, name: field.id, required: field.required === true };
  const value = field.default;
  let control;
  let extra = null;
  let read;
  let controls;
  let wrapperClass = "field";
  switch (field.type) {
    case "textarea":
      control = h("textarea", { ...base, class: "input", rows: 4, maxlength: field.maxLength, value: value ?? "" });
      read = () => [control.value.trim() !== "", control.value];
      break;
    case "number": {
      control = h("input", {
        ...base, type: "number", class: "input input-short", inputmode: field.integer ? "numeric" : "decimal",
        min: field.min, max: field.max, step: field.integer ? 1 : "any",
        value: value ?? "",
      });
      read = () => {
        const raw = control.value.trim();
        if (raw === "") return [false, undefined];
        const number = Number(raw);
        return [true, Number.isFinite(number) ? number : raw];
      };
      const range = [];
      if (field.min !== undefined) range.push(`at least ${field.min}`);
      if (field.max !== undefined) range.push(`at most ${field.max}`);
      if (range.length || field.integer) {
        extra = h("p", { class: "helper", id: uid("range") },
          `${field.integer ? "A whole number" : "A number"}${range.length ? `, ${words(range)}` : ""}.`);
      }
      break;
    }
    case "date":
      control = h("input", { ...base, type: "date", class: "input input-short", value: value ?? "" });
      read = () => [control.value !== "", control.value];
      break;
    case "time":
      control = h("input", { ...base, type: "time", class: "input input-short", value: value ?? "" });
      read = () => [control.value !== "", control.value.slice(0, 5)];
      break;
    case "datetime": {
      const match = typeof value === "string" ? DATETIME.exec(value) : null;
      const defaultOffset = match ? parseOffset(match[3]) : browserOffset();
      const local = h("input", {
        ...base, type: "datetime-local", class: "input input-medium",
        value: match ? match[1] + (match[2] && match[2] !== ":00" ? match[2].slice(0, 3) : "") : "",
        step: match && match[2] && match[2] !== ":00" ? 1 : null,
      });
      const offsetId = uid("offset");
      const select = h(
        "select",
        { id: offsetId, class: "input input-short", name: `${field.id}-offset` },
        offsetChoices([browserOffset(), defaultOffset]).map((offset) =>
          h("option", { value: offset, selected: parseOffset(offset) === defaultOffset }, `UTC${offset}`),
        ),
      );
      control = local;
      controls = [local, select];
      extra = h(
        "div",
        { class: "offset-row" },
        h("label", { for: offsetId }, "Time zone offset"),
        select,
      );
      read = () => [local.value !== "", local.value ? `${local.value}${select.value}` : ""];
      break;
    }
    case "boolean": {
      control = h("input", {
        ...base, required: false, type: "checkbox", role: "switch", class: "switch",
        checked: value === true,
      });
      read = () => [true, control.checked];
      wrapperClass = "field field-switch";
      break;
    }
    case "select": {
      control = h(
        "select",
        { ...base, class: "input input-medium" },
        h("option", { value: "" }, field.required ? "Choose…" : "None"),
        (field.options || []).map((o) => h("option", { value: o.id, selected: o.id === value }, o.label)),
      );
      read = () => [control.value !== "", control.value];
      break;
    }
    case "multiselect": {
      const chosen = new Set(Array.isArray(value) ? value : []);
      const boxes = (field.options || []).map((o) =>
        optionRow({ type: "checkbox", name: field.id, value: o.id, label: o.label, checked: chosen.has(o.id), extraClass: "option-compact" }),
      );
      controls = boxes.map((b) => b.box);
      const legendId = uid("legend");
      const fieldset = h(
        "fieldset",
        { class: "field field-group", "aria-describedby": help ? help.id : null },
        h("legend", { id: legendId, class: "field-label", dir: "auto" }, field.label,
          field.required ? [h("span", { class: "required", "aria-hidden": "true" }, " *"), h("span", { class: "sr-only" }, " (required)")] : null),
        help,
        boxes.map((b) => b.row),
      );
      const error = card.errorSlot(`content.values.${field.id}`, controls);
      fieldset.append(error);
      read = () => {
        const picked = boxes.filter((b) => b.box.checked).map((b) => b.box.value);
        return [picked.length > 0, picked];
      };
      return { node: fieldset, read, field };
    }
    case "email":
      control = h("input", { ...base, type: "email", class: "input", autocomplete: "email", value: value ?? "" });
      read = () => [control.value.trim() !== "", control.value.trim()];
      break;
    case "url":
      control = h("input", { ...base, type: "url", class: "input", placeholder: "https://", value: value ?? "" });
      read = () => [control.value.trim() !== "", control.value.trim()];
      break;
    case "phone":
      control = h("input", { ...base, type: "tel", class: "input input-medium", autocomplete: "tel", placeholder: "+14155552671", value: value ?? "" });
      // The full chat sends E.164: the digits, with a leading + when one was typed.
      read = () => {
        const raw = control.value.trim();
        const compact = raw.replace(/[\s.()-]/g, "");
        return [raw !== "", /^\+?\d+$/.test(compact) ? compact : raw];
      };
      break;
    default:
      control = h("input", { ...base, type: "text", class: "input", maxlength: field.maxLength, value: value ?? "" });
      read = () => [control.value.trim() !== "", control.value];
  }
  const error = card.errorSlot(`content.values.${field.id}`, controls || control);
  describe(control, help, extra && extra.id ? extra : null, error);
  if (field.type === "boolean") {
    return {
      node: h("div", { class: wrapperClass }, h("div", { class: "switch-row" }, control, labelFor(field, id)), help, error),
      read,
      field,
    };
  }
  return { node: h("div", { class: wrapperClass }, labelFor(field, id), help, control, extra, error), read, field };
}

function display(field, value) {
  if (value === undefined || value === "" || (Array.isArray(value) && !value.length)) return "—";
  if (field && (field.type === "select" || field.type === "multiselect")) {
    const labels = new Map((field.options || []).map((o) => [o.id, o.label]));
    return [].concat(value).map((v) => labels.get(v) || v).join(", ");
  }
  if (typeof value === "boolean") return value ? "Yes" : "No";
  return typeof value === "object" ? json(value) : String(value);
}

export const form = {
  name: "form",
  label: () => "Form",
  title: (ask) => ask.input.title || "A few details",
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const fields = (ask.input.fields || []).map((field) => buildField(field, card));
    const allowDecline = ask.input.allowDecline !== false;
    const required = fields.some((f) => f.field.required);
    return card.form(
      [
        required ? h("p", { class: "card-hint" }, h("span", { class: "required", "aria-hidden": "true" }, "*"), " marks a required field.") : null,
        fields.map((f) => f.node),
        card.errorSlot("content.values"),
        card.actions(
          button(ask.input.submitLabel || "Submit", { variant: "primary", type: "submit" }),
          allowDecline ? card.skipButton() : null,
        ),
      ],
      () => {
        const values = {};
        for (const { field, read } of fields) {
          const [present, value] = read();
          if (present || field.required) values[field.id] = value;
        }
        card.submit({ action: "accept", content: { values } });
      },
    );
  },
  summary(ask, response) {
    const values = (response && response.content && response.content.values) || {};
    const fields = ask.input.fields || [];
    return h(
      "div",
      {},
      h("p", { class: "summary-line" }, "Sent the details"),
      h(
        "dl",
        { class: "summary-values" },
        fields.map((field) => [h("dt", { dir: "auto" }, field.label), h("dd", { dir: "auto" }, display(field, values[field.id]))]),
      ),
    );
  },
};
