// Connection instructions in the UI: the "Agent instructions" section of a connection's card
// (an admin edits it; everyone else reads it), and the agent page's read-only "From
// connections" section.

import { ApiError, api, get } from "./api.js";
import { h, replace, uid } from "./dom.js";

/** Drafts an admin typed, by connection id: a reload of the page (or a failed save) keeps them. */
const drafts = new Map();

/** Whether the saved setting differs from the app's current template. */
function changedFromTemplate(setting, template) {
  if (!template) return false;
  if (!setting) return true;
  const from = setting.template || {};
  return setting.text !== template.text || from.id !== template.id || from.version !== template.version;
}

function offNotice(name) {
  return h("p", { class: "instructions-off", role: "note" }, `Turned off: agents are not told to use ${name}. Its tools stay available to them.`);
}

/**
 * The "Agent instructions" section of a connection's card, or null when there is nothing to
 * show. `template` is its app's `agentInstructions` (or null); `onSaved` reloads the page.
 */
export function instructionsSection(connection, { admin, template, onSaved, say }) {
  const setting = connection.agentInstructions || null;
  // The editor appears only when explicit template metadata exists (the app's default, or the
  // template a saved setting came from); instructions saved without one are shown read-only.
  const hasTemplate = Boolean(template || (setting && setting.template));
  if (connection.readOnly || (!setting && !hasTemplate)) return null;
  const headingId = uid("instructions");
  const section = h("section", { class: "instructions", "aria-labelledby": headingId, dataset: { section: "instructions" } });
  const heading = h("h4", { id: headingId }, "Agent instructions");
  if (!admin || !hasTemplate) {
    replace(
      section,
      heading,
      h("p", { class: "helper" }, setting.enabled ? `Agents that use ${connection.name} are told:` : `Saved for ${connection.name}:`),
      h("p", { class: "instructions-text" }, setting.text),
      setting.enabled ? null : offNotice(connection.name),
    );
    return section;
  }
  const toggleId = uid("tell");
  const textId = uid("text");
  const errors = h("div", { class: "form-errors", role: "alert" });
  const toggle = h("input", { id: toggleId, type: "checkbox", checked: setting ? Boolean(setting.enabled) : false });
  const initial = drafts.has(connection.id) ? drafts.get(connection.id) : setting ? setting.text : template ? template.text : "";
  const text = h("textarea", {
    id: textId,
    rows: 4,
    maxlength: 2000,
    "aria-describedby": `${textId}-help`,
    oninput: () => drafts.set(connection.id, text.value),
  });
  text.value = initial;

  async function save(body, what) {
    try {
      await api("PATCH", `/connections/${connection.id}`, { agentInstructions: body });
    } catch (error) {
      // The draft stays as typed; the error says what to change.
      const fields = error instanceof ApiError && error.problem.fields && !Array.isArray(error.problem.fields) ? error.problem.fields : {};
      const messages = Object.values(fields);
      replace(errors, h("p", {}, messages.length ? `Not saved: the text ${messages.join("; ")}.` : `Not saved: ${error.message}`));
      say(`Not saved: ${error.message}`);
      return;
    }
    drafts.delete(connection.id);
    say(what);
    await onSaved();
  }

  const form = h(
    "form",
    {
      class: "instructions-form",
      "aria-label": `Agent instructions of ${connection.name}`,
      onsubmit: (event) => {
        event.preventDefault();
        const body = { enabled: toggle.checked, text: text.value };
        if (setting && setting.template) body.template = setting.template;
        else if (template && text.value.trim() === template.text) body.template = { id: template.id, version: template.version };
        save(body, `Saved the instructions of ${connection.name}.`);
      },
    },
    errors,
    h(
      "div",
      { class: "field field-check" },
      toggle,
      h("label", { for: toggleId }, `Tell agents to use ${connection.name}`),
    ),
    setting && !setting.enabled ? offNotice(connection.name) : null,
    h(
      "div",
      { class: "field" },
      h("label", { for: textId }, "What agents are told"),
      text,
      h(
        "p",
        { class: "helper", id: `${textId}-help` },
        "Up to 2000 characters. Agents read it before they use this connection's tools; it allows nothing by itself, and every approval is still asked.",
      ),
    ),
    h(
      "div",
      { class: "button-row" },
      h("button", { class: "btn btn-primary btn-small", type: "submit" }, "Save instructions"),
      changedFromTemplate(setting, template)
        ? h(
            "button",
            {
              class: "btn btn-secondary btn-small",
              type: "button",
              onclick: async () => {
                try {
                  await api("POST", `/connections/${connection.id}/instructions/reset`);
                } catch (error) {
                  replace(errors, h("p", {}, `Not reset: ${error.message}`));
                  return;
                }
                drafts.delete(connection.id);
                say(`Reset the instructions of ${connection.name} to the default.`);
                await onSaved();
              },
            },
            "Reset to default",
          )
        : null,
      setting
        ? h(
            "button",
            { class: "btn btn-secondary btn-small", type: "button", onclick: () => save(null, `Removed the instructions of ${connection.name}.`) },
            "Remove instructions",
          )
        : null,
    ),
    connection.serverInstructions
      ? h(
          "p",
          { class: "helper" },
          "The server describes itself too; that text is never given to agents unless you copy it here, read it and save it. ",
          h(
            "button",
            {
              class: "btn btn-secondary btn-small",
              type: "button",
              onclick: () => {
                text.value = connection.serverInstructions.trim().slice(0, 2000);
                drafts.set(connection.id, text.value);
                text.focus();
                say("Copied the server's own instructions into the text. Nothing is saved until you save it.");
              },
            },
            "Copy the server's own instructions",
          ),
        )
      : null,
  );
  replace(section, heading, form);
  return section;
}

/** The agent page's read-only "From connections" section of one agent. */
export function fromConnections(agentName) {
  const headingId = uid("from");
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const section = h(
    "section",
    // Named with its agent: the agents page has one such region for each.
    { class: "from-connections", "aria-label": `From connections: ${agentName}`, dataset: { agent: agentName } },
    h("h3", { id: headingId }, "From connections"),
    h(
      "p",
      { class: "helper" },
      "What the connections this agent uses tell it. A conversation gets a connection's instructions only while you may use at least one of its tools, so what it gets can change from task to task.",
    ),
    body,
  );
  get(`/agents/${encodeURIComponent(agentName)}/instructions`)
    .then((data) => {
      if (!data.sources.length) {
        replace(body, h("p", {}, "No connection gives this agent instructions."));
        return;
      }
      replace(
        body,
        h(
          "ul",
          { class: "source-list" },
          data.sources.map((source) =>
            h(
              "li",
              { class: "source", dataset: { connectionId: source.connectionId } },
              h("h4", {}, h("a", { href: `/connections#connection-${source.connectionId}` }, source.name)),
              h(
                "p",
                { class: "helper" },
                source.connector === "custom" ? "Custom connection" : source.connector === "config" ? "From the configuration file" : `App: ${source.connector}`,
                source.template ? ` · default instructions ${source.template.id} (version ${source.template.version})` : " · written by an admin",
                source.docsUrl ? [" · ", h("a", { href: source.docsUrl, rel: "noopener noreferrer", target: "_blank" }, "Documentation")] : null,
              ),
              h("p", { class: "instructions-text" }, source.text),
              !source.enabled
                ? offNotice(source.name)
                : source.delivered
                  ? h("p", { class: "helper" }, "Given to this agent's conversations now.")
                  : h("p", { class: "instructions-off", role: "note" }, `Not given now: ${source.reason}.`),
            ),
          ),
        ),
      );
    })
    .catch((error) => replace(body, h("p", { role: "alert" }, error.message)));
  return section;
}
