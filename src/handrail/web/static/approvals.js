// "Waiting for your approval": the calls that name the signed-in user (or admins, for an
// admin) as an approver, in other people's conversations (GET /approvals). Each shows as its
// approval or confirmation card, with what the gate needs (the call and its arguments or
// preview, the agent's last message, who approved so far) and never the rest of the
// conversation; answers go to POST /approvals/{historyId}.

import { api, get } from "./api.js";
import { h, replace } from "./dom.js";
import { createCard } from "./cards/index.js";

function approvalItem(item, info, reload, say) {
  const ask = { ...item.ask, status: "pending" };
  const ctx = {
    me: info.user,
    heldCall: () => (item.arguments ? { args: item.arguments } : null),
    safetyClass: () => null,
    answer: async (card, envelope) => {
      const result = await api("POST", `/approvals/${item.historyId}`, {
        toolCallId: ask.toolCallId,
        ...envelope,
      });
      if (result.status === "waiting") {
        const done = (result.approvedBy || []).map((a) => a.userId).join(", ");
        say(`Approved. It waits for more approvals (${done} of ${result.quorum}).`);
      } else {
        say(envelope.action === "cancel" || envelope.content?.confirmed === false ? "Denied: the call will not run." : "Approved: the call runs now.");
      }
      card.resolve(envelope);
      setTimeout(reload, 300);
    },
    onConflict: () => setTimeout(reload, 300),
    headingLevel: 3, // under the section's h2
  };
  const card = createCard(ask, ctx);
  return h(
    "li",
    { class: "approval-item", dataset: { historyId: item.historyId, toolCallId: ask.toolCallId } },
    h("p", { class: "inbox-meta" }, `Asked in ${item.ownerId}'s conversation`),
    item.agentMessage ? h("blockquote", { class: "agent-said", dir: "auto" }, item.agentMessage) : null,
    card.el,
  );
}

/** The section, loaded now and again by its Refresh button. */
export function approvalsSection(info) {
  const list = h("ul", { class: "inbox-list approvals-list", "aria-label": "Waiting for your approval" });
  const status = h("p", { class: "muted", role: "status" });
  const section = h(
    "section",
    { class: "approvals", hidden: true, "aria-labelledby": "approvals-heading" },
    h("h2", { id: "approvals-heading" }, "Waiting for your approval"),
    status,
    list,
  );
  function say(text) {
    status.textContent = text;
  }
  async function load() {
    try {
      const items = await get("/approvals");
      section.hidden = !items.length && !status.textContent;
      replace(list, items.map((item) => approvalItem(item, info, load, say)));
      if (!items.length && section.hidden === false && !status.textContent) say("Nothing waits for your approval.");
    } catch (error) {
      section.hidden = false;
      say(error.message);
    }
  }
  load();
  return { el: section, load };
}
