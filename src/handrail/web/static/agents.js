// The agents page: each agent the caller can talk to, with the read-only "From connections"
// section: what its connections tell it, where each comes from, and which are off.

import { h, replace } from "./dom.js";
import { fromConnections } from "./instructions.js";

export function agentsPage(main, ctx) {
  const agents = (ctx.info && ctx.info.agents) || [];
  replace(
    main,
    h(
      "div",
      { class: "narrow" },
      h("h1", {}, "Agents"),
      agents.length
        ? h(
            "ul",
            { class: "agent-list" },
            agents.map((agent) =>
              h(
                "li",
                { class: "agent", dataset: { agent: agent.name } },
                h("h2", {}, agent.name),
                h("p", { class: "helper" }, `Model: ${agent.model}`),
                h("section", { class: "agent-instructions" }, h("h3", { class: "sr-only" }, "Agent instructions"), fromConnections(agent.name)),
              ),
            ),
          )
        : h("p", {}, "No agents."),
    ),
  );
  return () => {};
}
