// The watch shows the real gate behind each simple card: what kind of gate it is (an
// approval, a confirmation with its live countdown, a permission, a clarify, a question), read
// from the conversation's view (GET /histories/{id}), and after a tap what became of the held
// call: a denial never reads as a success, and a confirmed call that then failed says so.

import { api, get } from "./api.js";
import { reasonWords } from "./cards/card.js";
import { clock, h } from "./dom.js";

const ORIGIN_LABELS = {
  approval: "Approval",
  confirmation: "Confirmation",
  permission: "Permission",
  selection: "Choice",
  elicitation: "Request from an app",
  "page-tool": "Page",
};

/** The pending ask the history view shows for a watch item, or null. */
export async function gateOf(item) {
  try {
    const view = await get(`/histories/${item.historyId}`);
    const pending = view && view.pendingAsk;
    return pending && pending.toolCallId === item.toolCallId ? pending : null;
  } catch {
    return null;
  }
}

function remaining(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const minutes = Math.floor(total / 60);
  return `${minutes}:${String(total % 60).padStart(2, "0")}`;
}

/** The line above a card naming its gate, with a countdown to `expiresAt` when it has one.
 * Returns {el, stop}. */
export function gateLine(gate) {
  const label = ORIGIN_LABELS[gate.origin] || (gate.kind === "clarify" ? "Clarify" : "Question");
  const countdown = h("span", { class: "watch-countdown", role: "timer", "aria-live": "off" });
  const el = h("p", { class: "watch-gate", dataset: { origin: gate.origin || gate.kind } }, h("strong", {}, label), countdown);
  const expires = Date.parse(gate.expiresAt || "");
  let timer = 0;
  function tick() {
    if (Number.isNaN(expires)) return true;
    if (Date.now() >= expires) {
      countdown.textContent = ` · expired at ${clock(gate.expiresAt)}`;
      return true;
    }
    countdown.textContent = ` · expires in ${remaining(expires - Date.now())}`;
    return false;
  }
  if (!tick()) {
    timer = setInterval(() => {
      if (tick()) clearInterval(timer);
    }, 1000);
  }
  return { el, stop: () => clearInterval(timer) };
}

/** What became of the call a gate held, after its answer: "denied", "failed", "done", or null
 * (not known yet, or the gate held no call). */
export async function outcomeOf(historyId, gate) {
  if (!gate || !gate.heldToolCallId) return null;
  try {
    const view = await get(`/histories/${historyId}`);
    const row = (view.rows || []).find((r) => r.type === "tool-result" && r.toolCallId === gate.heldToolCallId);
    if (!row) return null;
    const result = row.result;
    if (result && typeof result === "object" && (result.type === "execution-denied" || result.approved === false)) {
      return { status: "denied", reason: result.reason || "denied" };
    }
    const inner = result && typeof result === "object" && result.editedByUser ? result.result : result;
    if (row.isError || (inner && typeof inner === "object" && inner.status === "error")) {
      return { status: "failed", message: (inner && inner.message) || "the call failed" };
    }
    return { status: "done" };
  } catch {
    return null;
  }
}

/** The status line of a tap whose held call's outcome is known. */
export function outcomeText(label, outcome) {
  if (outcome.status === "denied") return [`“${label}” sent: the call did not run (${reasonWords(outcome.reason)}).`, "info"];
  if (outcome.status === "failed") return [`“${label}” was sent, but the call failed: ${outcome.message}`, "error"];
  return null;
}

/** The calls waiting for the signed-in user's approval in other people's conversations
 * (GET /approvals), as simple cards whose buttons answer through POST /approvals/{historyId}.
 * `say(text, tone)` reports; `done()` reloads the list. */
export async function approvalCards(simpleCard, say, done) {
  let items = [];
  try {
    items = await get("/approvals");
  } catch {
    return [];
  }
  return items.map((item) => {
    const ask = item.ask;
    let el = null;
    async function tap(button) {
      for (const b of el.querySelectorAll("button")) b.disabled = true;
      try {
        const result = await api(
          "POST",
          `/approvals/${item.historyId}`,
          { toolCallId: ask.toolCallId, ...button.response },
          { headers: { "X-Handrail-Via": "watch" } },
        );
        const approving = button.response && button.response.content && button.response.content.confirmed === true;
        say(
          !approving
            ? `“${button.label}” sent: the call will not run.`
            : result.status === "waiting"
              ? `“${button.label}” sent. It waits for more approvals.`
              : `“${button.label}” sent: the call runs now.`,
          "ok",
        );
      } catch (error) {
        say(`Not sent: ${error.message}`, "error");
      } finally {
        done();
      }
    }
    const done_ = (ask.approvedBy || []).map((a) => a.userId);
    el = simpleCard(ask.simple, {
      headingLevel: "h2",
      onButton: (button) => tap(button),
      extra: h(
        "p",
        { class: "watch-quorum" },
        `For ${item.ownerId}: needs ${ask.quorum || 1} of ${(ask.approvers || []).join(", ")}`,
        done_.length ? `; approved by ${done_.join(", ")}` : "",
        ".",
      ),
    });
    el.prepend(h("p", { class: "watch-gate", dataset: { origin: "approver" } }, h("strong", {}, "Your approval")));
    return el;
  });
}
