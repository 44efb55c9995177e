// Grants and permission levels: the standing yeses the user gave one tool (revoke each), and
// the level saved per connection (forget it, so its next use asks again).

import { ApiError, api, get, getPage } from "./api.js";
import { ago, h, replace } from "./dom.js";

const SCOPES = { conversation: "This conversation", always: "Always" };

export function grantsPage(main, ctx) {
  const grantsBox = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const levelsBox = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const status = h("p", { class: "sr-only", role: "status" });
  let alive = true;

  async function revoke(grant) {
    try {
      await api("DELETE", `/grants/${encodeURIComponent(grant.id)}`);
      status.textContent = `Revoked the grant for ${grant.toolName}.`;
    } catch (error) {
      status.textContent = error.message;
    }
    await loadGrants();
  }

  async function forget(connection) {
    try {
      await api("DELETE", `/permissions/${encodeURIComponent(connection.connectionId)}`);
      status.textContent = `Forgot the level for ${connection.name}.`;
    } catch (error) {
      status.textContent = error.message;
    }
    await loadLevels();
  }

  async function loadGrants() {
    try {
      // Every page of the list (GET /grants is paged: follow its Link header).
      let grants = [];
      let next = "/grants?limit=200";
      for (let pages = 0; next && pages < 50; pages++) {
        const page = await getPage(next);
        grants = grants.concat(page.items);
        next = page.next;
      }
      if (!alive) return;
      if (!grants.length) {
        replace(grantsBox, h("p", {}, "You have not given any tool a standing yes. Approvals with “This conversation” or “Always for this tool” appear here."));
        return;
      }
      replace(
        grantsBox,
        h(
          "table",
          { class: "data-table" },
          h("caption", { class: "sr-only" }, "Your grants"),
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Tool"), h("th", { scope: "col" }, "Connection"), h("th", { scope: "col" }, "Scope"), h("th", { scope: "col" }, "Granted"), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")))),
          h(
            "tbody",
            {},
            grants.map((grant) =>
              h(
                "tr",
                { dataset: { grantId: grant.id } },
                h("td", { "data-label": "Tool" }, h("code", {}, grant.toolName)),
                h("td", { "data-label": "Connection" }, grant.connectionId),
                h(
                  "td",
                  { "data-label": "Scope" },
                  SCOPES[grant.scope] || grant.scope,
                  grant.historyId ? [" (", h("a", { href: `/c/${grant.historyId}`, "data-link": "" }, "open"), ")"] : null,
                ),
                h("td", { "data-label": "Granted" }, h("time", { datetime: grant.created }, ago(grant.created))),
                h(
                  "td",
                  {},
                  h(
                    "button",
                    { class: "btn btn-secondary btn-small", type: "button", "aria-label": `Revoke ${grant.toolName} (${SCOPES[grant.scope] || grant.scope})`, onclick: () => revoke(grant) },
                    "Revoke",
                  ),
                ),
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      replace(grantsBox, h("p", { role: "alert" }, unavailable(error, "grants")));
    }
  }

  /** Change the level in place, with the names the permission ask uses. */
  function levelPicker(connection, levels) {
    const select = h(
      "select",
      {
        class: "input level-select",
        "aria-label": `Level for ${connection.name}`,
        onchange: () => save(connection, select.value, select),
      },
      connection.level ? null : h("option", { value: "" }, "Choose a level…"),
      levels.map((level) => h("option", { value: level.id, selected: level.id === connection.level }, level.label)),
    );
    return h("p", { class: "level-picker" }, select);
  }

  async function save(connection, level, select) {
    if (!level) return;
    select.disabled = true;
    try {
      await api("PUT", `/permissions/${encodeURIComponent(connection.connectionId)}`, { level });
      const label = select.selectedOptions[0] ? select.selectedOptions[0].textContent : level;
      status.textContent = `Saved: ${connection.name} is now “${label}”.`;
      loadLevels();
    } catch (error) {
      status.textContent = error.message;
      select.disabled = false;
    }
  }

  async function loadLevels() {
    try {
      const data = await get("/permissions");
      if (!alive) return;
      const labels = new Map((data.levels || []).map((l) => [l.id, l]));
      const connections = data.connections || [];
      if (!connections.length) {
        replace(levelsBox, h("p", {}, "No agent here has tools from a connection."));
        return;
      }
      replace(
        levelsBox,
        h(
          "ul",
          { class: "connection-list" },
          connections.map((connection) => {
            const level = connection.level ? labels.get(connection.level) : null;
            return h(
              "li",
              { class: "connection", dataset: { connectionId: connection.connectionId } },
              h("h3", {}, connection.name, " ", h("code", { class: "muted" }, connection.connectionId)),
              h(
                "p",
                {},
                "Level: ",
                h("strong", {}, level ? level.label : "not set (its next use asks)"),
                level ? h("span", { class: "helper" }, ` — ${level.description}`) : null,
              ),
              levelPicker(connection, data.levels || []),
              connection.level
                ? h("button", { class: "btn btn-secondary btn-small", type: "button", "aria-label": `Forget the level for ${connection.name}`, onclick: () => forget(connection) }, "Forget")
                : null,
              h(
                "ul",
                { class: "tool-classes" },
                (connection.tools || []).map((tool) =>
                  h("li", {}, h("code", {}, tool.name), " ", h("span", { class: `badge badge-${tool.safetyClass}` }, tool.safetyClass)),
                ),
              ),
            );
          }),
        ),
      );
    } catch (error) {
      replace(levelsBox, h("p", { role: "alert" }, unavailable(error, "permission levels")));
    }
  }

  replace(
    main,
    h(
      "div",
      { class: "narrow" },
      h("h1", {}, "Grants and permissions"),
      status,
      h("section", { "aria-labelledby": "grants-heading" }, h("h2", { id: "grants-heading" }, "Grants"), grantsBox),
      h("section", { "aria-labelledby": "levels-heading" }, h("h2", { id: "levels-heading" }, "Permission levels"), levelsBox),
    ),
  );
  loadGrants();
  loadLevels();
  return () => {
    alive = false;
  };
}

function unavailable(error, what) {
  if (error instanceof ApiError && (error.status === 404 || error.status === 405)) {
    return `This server does not offer ${what}.`;
  }
  return error.message;
}
