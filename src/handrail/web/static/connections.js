// Connections: the saved connections (and the configuration's, read-only) with their status and
// their tools' safety classes; for admins, the catalog to add one from (a form from its config
// fields, secrets as password inputs), refresh, trust, per-tool overrides, approvers
// (connection_approvals.js) and remove. Everyone
// else sees the connections they can use and their own permission level.

import { ApiError, api, get, getPage } from "./api.js";
import { ago, h, replace, uid } from "./dom.js";
import { approvalsEditor, rulesText } from "./connection_approvals.js";
import { instructionsSection } from "./instructions.js";

const CLASSES = ["read-only", "mutating", "consequential"];
const STATES = { connected: "Connected", starting: "Starting", error: "Error" };
/** What kind of connection a catalog app makes, in words. */
const KINDS = { "mcp-stdio": "· MCP server, run here", "mcp-http": "· MCP server over HTTP", actions: "· HTTP actions" };

export function connectionsPage(main, ctx) {
  const admin = Boolean(ctx.info && ctx.info.user && ctx.info.user.isAdmin);
  const listBox = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const catalogBox = h("div", {});
  const status = h("p", { class: "sr-only", role: "status" });
  let alive = true;
  let waiting = 0;

  function say(text) {
    status.textContent = text;
  }

  async function act(what, work) {
    try {
      await work();
      say(what);
    } catch (error) {
      say(error.message);
      const alert = listBox.querySelector(".connections-error") || h("p", { class: "connections-error", role: "alert" });
      alert.textContent = error.message;
      listBox.prepend(alert);
      return;
    }
    await load();
  }

  function toolRows(connection, tools) {
    return h(
      "table",
      { class: "data-table tool-table" },
      h("caption", { class: "sr-only" }, `Tools of ${connection.name}`),
      h(
        "thead",
        {},
        h("tr", {}, h("th", { scope: "col" }, "Tool"), h("th", { scope: "col" }, "Model calls it"), h("th", { scope: "col" }, "Class"), h("th", { scope: "col" }, "Who approves"), admin && !connection.readOnly ? h("th", { scope: "col" }, "Override") : null),
      ),
      h(
        "tbody",
        {},
        tools.map((tool) =>
          h(
            "tr",
            { dataset: { tool: tool.name } },
            h("td", { "data-label": "Tool" }, h("code", {}, tool.name), h("div", { class: "helper" }, tool.description)),
            h("td", { "data-label": "Model calls it" }, tool.modelName ? h("code", {}, tool.modelName) : h("span", { class: "muted" }, "not offered")),
            h("td", { "data-label": "Class" }, h("span", { class: `badge badge-${tool.safetyClass}` }, tool.safetyClass)),
            h("td", { "data-label": "Who approves", class: "tool-rules" }, rulesText(tool.rules)),
            admin && !connection.readOnly ? h("td", { "data-label": "Override" }, overrideSelect(connection, tool)) : null,
          ),
        ),
      ),
    );
  }

  function overrideSelect(connection, tool) {
    const select = h(
      "select",
      {
        "aria-label": `Class of ${tool.name}`,
        onchange: () => {
          const overrides = { ...connection.overrides };
          if (select.value) overrides[tool.name] = select.value;
          else delete overrides[tool.name];
          act(`Saved the class of ${tool.name}.`, () => api("PATCH", `/connections/${connection.id}`, { overrides }));
        },
      },
      h("option", { value: "" }, "From its hints"),
      CLASSES.map((c) => h("option", { value: c, selected: tool.override === c }, c)),
    );
    return select;
  }

  function card(connection, tools, levels, templates) {
    const state = connection.status.state;
    const level = levels.get(connection.id);
    return h(
      "li",
      { class: "connection", id: `connection-${connection.id}`, dataset: { connectionId: connection.id } },
      h("h3", {}, connection.name, " ", h("span", { class: `badge badge-state-${state}` }, STATES[state] || state)),
      h(
        "p",
        { class: "helper" },
        connection.readOnly ? "From the configuration file (read-only)" : `App: ${connection.app}`,
        ` · ${connection.status.toolCount} tool${connection.status.toolCount === 1 ? "" : "s"}`,
        connection.status.listedAt ? ` · listed ${ago(connection.status.listedAt)}` : "",
        ` · ${connection.trusted ? "trusted" : "not trusted: its tools are consequential unless an admin says otherwise"}`,
      ),
      connection.status.message ? h("p", { class: state === "error" ? "connection-message" : "helper", role: "note" }, connection.status.message) : null,
      connection.status.authorize
        ? h(
            "p",
            { class: "connection-sign-in" },
            h("a", { class: "btn btn-primary btn-small", href: connection.status.authorize, target: "_blank", rel: "noopener noreferrer" }, `Sign in to ${connection.name}`),
            h("span", { class: "helper" }, " Opens in a new tab; this page updates when you are back."),
          )
        : null,
      connection.secretsSet && connection.secretsSet.length ? h("p", { class: "helper" }, `Secrets set: ${connection.secretsSet.join(", ")}`) : null,
      h("p", { class: "helper" }, "Your level: ", h("strong", {}, level || "not set (its next use asks)")),
      instructionsSection(connection, { admin, template: templates.get(connection.app) || null, onSaved: load, say }),
      admin && !connection.readOnly ? approvalsEditor(connection, tools, { onSaved: load, say }) : null,
      admin && !connection.readOnly
        ? h(
            "div",
            { class: "button-row" },
            h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: () => act(`Refreshed ${connection.name}.`, () => api("POST", `/connections/${connection.id}/refresh`)) }, "Refresh"),
            connection.status.signIn === "needed" || (connection.status.signIn === "waiting" && !connection.status.authorize)
              ? h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: () => act(`Started signing in to ${connection.name}.`, () => api("POST", `/connections/${connection.id}/authorize`)) }, "Sign in")
              : null,
            h(
              "button",
              { class: "btn btn-secondary btn-small", type: "button", onclick: () => act(`Saved ${connection.name}.`, () => api("PATCH", `/connections/${connection.id}`, { trusted: !connection.trusted })) },
              connection.trusted ? "Stop trusting" : "Trust",
            ),
            h(
              "button",
              {
                class: "btn btn-danger btn-small",
                type: "button",
                onclick: () => {
                  if (window.confirm(`Remove ${connection.name}? Its tools leave every agent's next turn.`)) {
                    act(`Removed ${connection.name}.`, () => api("DELETE", `/connections/${connection.id}`));
                  }
                },
              },
              "Remove",
            ),
          )
        : null,
      tools.length ? toolRows(connection, tools) : null,
    );
  }

  async function load() {
    try {
      const [connections, permissions, apps] = await Promise.all([everyConnection(), get("/permissions"), get("/catalog").catch(() => [])]);
      const templates = new Map(apps.filter((a) => a.agentInstructions).map((a) => [a.slug, a.agentInstructions]));
      const tools = await Promise.all(connections.map((c) => get(`/connections/${encodeURIComponent(c.id)}/tools`).catch(() => [])));
      if (!alive) return;
      const levels = new Map((permissions.saved || []).map((s) => [s.connectionId, s.level]));
      if (!connections.length) {
        replace(listBox, h("p", {}, admin ? "No connections yet. Add one from the catalog below." : "No connection is set up for your agents yet."));
        return;
      }
      replace(listBox, h("ul", { class: "connection-list" }, connections.map((c, i) => card(c, tools[i], levels, templates))));
      // A sign-in under way finishes in another tab: look again until it has.
      clearTimeout(waiting);
      if (connections.some((c) => c.status.signIn === "waiting")) waiting = setTimeout(() => alive && load(), 2000);
    } catch (error) {
      replace(listBox, h("p", { role: "alert" }, unavailable(error)));
    }
  }

  function addForm(app) {
    const fields = app.config || [];
    const errors = h("div", { role: "alert", class: "form-errors" });
    const nameId = uid("name");
    const trustedId = uid("trusted");
    const inputs = fields.map((field) => {
      const id = uid(field.key);
      const secret = field.type === "secret" || field.type === "password";
      const input = h("input", { id, name: field.key, type: secret ? "password" : field.type === "url" ? "url" : "text", autocomplete: secret ? "new-password" : "off", required: field.required ? "" : null });
      const error = fieldError(input);
      return {
        field,
        secret,
        input,
        error,
        row: h("div", { class: "field" }, h("label", { for: id }, field.label, field.required ? " (required)" : ""), input, field.help ? h("p", { class: "helper" }, field.help) : null, error),
      };
    });
    const name = h("input", { id: nameId, name: "name", type: "text", value: app.name, required: "" });
    const nameError = fieldError(name);
    // Where an error of the server's `fields` goes: its path (name, settings.baseUrl,
    // secrets.apiKey) names the input, and the person reads it under that input's label.
    const slots = new Map([["name", { input: name, error: nameError, label: "Name" }]]);
    for (const one of inputs) {
      const slot = { input: one.input, error: one.error, label: one.field.label };
      slots.set(`${one.secret ? "secrets" : "settings"}.${one.field.key}`, slot);
      slots.set(one.field.key, slot);
    }
    function clearFieldErrors() {
      for (const { input, error } of slots.values()) {
        input.removeAttribute("aria-invalid");
        error.textContent = "";
        error.hidden = true;
      }
    }
    const trusted = h("input", { id: trustedId, name: "trusted", type: "checkbox" });
    const form = h(
      "form",
      {
        class: "add-connection",
        "aria-label": `Add ${app.name}`,
        onsubmit: async (event) => {
          event.preventDefault();
          const body = { app: app.slug, name: name.value, settings: {}, secrets: {}, trusted: trusted.checked };
          for (const one of inputs) {
            if (!one.input.value) continue;
            (one.secret ? body.secrets : body.settings)[one.field.key] = one.input.value;
          }
          clearFieldErrors();
          try {
            const saved = await api("POST", "/connections", body);
            errors.textContent = "";
            form.remove();
            say(`Added ${saved.name}: ${STATES[saved.status.state] || saved.status.state}.`);
            await load();
          } catch (error) {
            const fields = error instanceof ApiError && error.problem.fields && !Array.isArray(error.problem.fields) ? error.problem.fields : {};
            const general = [];
            let first = null;
            for (const [path, message] of Object.entries(fields)) {
              const slot = slots.get(path);
              if (!slot) {
                general.push(h("p", {}, `${fieldWords(path)}: ${sentence(message)}`));
                continue;
              }
              slot.error.textContent = `${slot.label}: ${sentence(message)}`;
              slot.error.hidden = false;
              slot.input.setAttribute("aria-invalid", "true");
              first = first || slot.input;
            }
            const entries = Object.keys(fields).length;
            replace(
              errors,
              h("p", {}, entries ? `${app.name} was not added: ${entries === 1 ? "a field needs" : "some fields need"} a change (see below).` : error.message),
              general,
            );
            if (first) first.focus();
          }
        },
      },
      h("h3", {}, `Add ${app.name}`),
      errors,
      h("div", { class: "field" }, h("label", { for: nameId }, "Name"), name, h("p", { class: "helper" }, "Its tools are named after it, such as notes_list_notes."), nameError),
      inputs.map((one) => one.row),
      h("div", { class: "field field-check" }, trusted, h("label", { for: trustedId }, "Trust its tools' hints (otherwise every tool is consequential)")),
      h("div", { class: "button-row" }, h("button", { class: "btn btn-primary", type: "submit" }, "Add connection"), h("button", { class: "btn btn-secondary", type: "button", onclick: () => form.remove() }, "Cancel")),
    );
    return form;
  }

  async function loadCatalog() {
    if (!admin) return;
    try {
      const apps = await get("/catalog");
      if (!alive) return;
      replace(
        catalogBox,
        h(
          "ul",
          { class: "catalog-list" },
          apps.map((app) => {
            const item = h(
              "li",
              { class: "catalog-app", dataset: { slug: app.slug } },
              h("h3", {}, app.name, " ", h("span", { class: "muted catalog-kind" }, KINDS[app.kind] || app.kind)),
              h("p", {}, app.description),
              app.docsUrl ? h("p", { class: "helper" }, h("a", { href: app.docsUrl, rel: "noopener noreferrer", target: "_blank" }, "Documentation")) : null,
            );
            item.append(
              h(
                "button",
                {
                  class: "btn btn-secondary btn-small",
                  type: "button",
                  "aria-label": `Add ${app.name}`,
                  onclick: () => {
                    if (item.querySelector("form")) return;
                    const form = addForm(app);
                    item.append(form);
                    form.querySelector("input").focus();
                  },
                },
                "Add",
              ),
            );
            return item;
          }),
        ),
      );
    } catch (error) {
      replace(catalogBox, h("p", { role: "alert" }, unavailable(error)));
    }
  }

  replace(
    main,
    h(
      "div",
      { class: "narrow" },
      h("h1", {}, "Connections"),
      status,
      h("section", { "aria-labelledby": "connections-heading" }, h("h2", { id: "connections-heading" }, admin ? "Connections on this server" : "Connections your agents use"), listBox),
      admin ? h("section", { "aria-labelledby": "catalog-heading" }, h("h2", { id: "catalog-heading" }, "Add from the catalog"), catalogBox) : null,
    ),
  );
  load();
  loadCatalog();
  return () => {
    alive = false;
    clearTimeout(waiting);
  };
}

/** Every page of GET /connections (it is paged: follow its Link header). */
async function everyConnection() {
  let connections = [];
  let next = "/connections?limit=200";
  for (let pages = 0; next && pages < 50; pages++) {
    const page = await getPage(next);
    connections = connections.concat(page.items);
    next = page.next;
  }
  return connections;
}

/** An error line under an input, tied to it for assistive technology (aria-describedby). */
function fieldError(input) {
  const error = h("p", { class: "field-error", id: uid("error"), hidden: true });
  input.setAttribute("aria-describedby", error.id);
  return error;
}

/** A server's field message as a sentence: "must be an http(s) URL" -> "must be an http(s) URL." */
function sentence(message) {
  const text = String(message || "").trim();
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** A field path the form has no input for (agents, overrides.<tool>), in words. */
function fieldWords(path) {
  const [head, ...rest] = String(path).split(".");
  const names = { agents: "Agents", overrides: "Tool classes", settings: "Settings", secrets: "Secrets", trusted: "Trust", approvals: "Approvers" };
  return [names[head] || head, ...rest].join(" › ");
}

function unavailable(error) {
  if (error instanceof ApiError && (error.status === 404 || error.status === 405)) {
    return "This server does not offer connections.";
  }
  return error.message;
}
