// /watch: the compact view. Each pending ask as its simple card (title, text, up to three
// buttons, the hand-off line); a tap sends {toolCallId, buttonId, surface: "compact"} to
// POST /histories/{id}/turn and shows what the agent said.

import { ApiError, api, getPage } from "./api.js";
import { h, replace } from "./dom.js";
import { changesAsks, onEvent } from "./live.js";
import { simpleCard } from "./cards/simple.js";
import { approvalCards, gateLine, gateOf, outcomeOf, outcomeText } from "./watch_gate.js";

/** How many asks the compact view shows at once. */
const WATCH_LIMIT = 20;

export function watchPage(main, ctx) {
  const cards = h("div", { class: "watch-cards" });
  const status = h("p", { class: "watch-status", role: "status", tabindex: "-1" });
  let alive = true;
  let busy = false;
  // Confirmations the server said expired: their card offers only the way to cancel.
  const expired = new Set();
  // The gate behind each card (from the conversation's view), and the countdowns shown.
  const gates = new Map();
  let stops = [];

  async function showGate(item, el) {
    const gate = gates.get(item.toolCallId) || (await gateOf(item));
    if (!gate || !alive || !el.isConnected) return;
    gates.set(item.toolCallId, gate);
    const line = gateLine(gate);
    el.prepend(line.el);
    stops.push(line.stop);
  }

  function say(text, tone = "info") {
    status.className = `watch-status notice-${tone}`;
    status.textContent = text;
  }

  async function tap(item, button, cardEl) {
    if (busy) return;
    busy = true;
    // Where the tapped card was, so the focus stays there once the list is drawn again.
    const position = Array.prototype.indexOf.call(cards.children, cardEl);
    for (const b of cardEl.querySelectorAll("button")) b.disabled = true;
    cardEl.setAttribute("aria-busy", "true");
    try {
      const result = await api(
        "POST",
        `/histories/${item.historyId}/turn`,
        { toolCallId: item.toolCallId, buttonId: button.id, surface: "compact" },
        { headers: { "X-Handrail-Via": "watch" } },
      );
      const said = (result.text || "").trim();
      say(
        result.error
          ? `“${button.label}” was sent, but the agent failed: ${result.error}`
          : said
            ? `“${button.label}” sent. The agent says: ${said}`
            : `“${button.label}” sent.`,
        result.error ? "error" : "ok",
      );
      // What became of the held call: a denial never reads as a success, a failure says so.
      const outcome = await outcomeOf(item.historyId, gates.get(item.toolCallId));
      const told = outcome && outcomeText(button.label, outcome);
      if (told) say(...told);
    } catch (error) {
      const conflict = error instanceof ApiError && error.status === 409;
      if (conflict && error.problem.code === "CONFIRMATION_STALE") {
        expired.add(item.toolCallId);
        say(
          `“${button.label}” was not sent: the confirmation expired, so nothing was done. ` +
            "Cancel it, or ask the agent to prepare it again.",
          "error",
        );
      } else {
        say(conflict ? "That ask was already answered elsewhere." : `Not sent: ${error.message}`, "error");
      }
    } finally {
      busy = false;
      await load();
      keepFocus(position);
    }
  }

  /** After a tap: the focus goes to the card now at the tapped one's place (its first
   * button), else to the status line, never lost to the page. */
  function keepFocus(position) {
    const here = cards.children[Math.min(Math.max(position, 0), cards.children.length - 1)];
    const target = here && here.querySelector("button:not(:disabled), a");
    if (target) target.focus();
    else status.focus();
  }

  /** The card of a confirmation that expired: only its cancel button, and why. */
  function expiredCard(simple) {
    const buttons = (simple.buttons || []).filter((b) => b.id === "deny" || b.style === "cancel");
    return { ...simple, buttons };
  }

  async function load() {
    try {
      // The newest page only: answering one brings the next in on the following load.
      const { items, next } = await getPage(`/histories/pendingAsks?limit=${WATCH_LIMIT}`);
      if (!alive) return;
      for (const stop of stops) stop();
      stops = [];
      replace(
        cards,
        items.length
          ? items.map((item) => {
              let el = null;
              const gone = expired.has(item.toolCallId);
              el = simpleCard(gone ? expiredCard(item.simple) : item.simple, {
                headingLevel: "h2",
                handoffHref: `/c/${item.historyId}`,
                onButton: (button) => tap(item, button, el),
                extra: gone ? h("p", { class: "expired-note" }, "Expired: nothing was sent.") : null,
              });
              showGate(item, el);
              return el;
            })
          : h("p", { class: "watch-empty" }, "Nothing is waiting on you."),
        next ? h("p", { class: "watch-empty" }, h("a", { href: "/inbox", "data-link": "" }, "More are waiting: open the inbox")) : null,
      );
      ctx.refreshPending();
      // Then the calls waiting for this user's approval in other people's conversations.
      const approvals = await approvalCards(simpleCard, say, load);
      if (alive && approvals.length) {
        const empty = cards.querySelector(":scope > .watch-empty:first-child");
        if (empty && !items.length) empty.remove();
        cards.append(...approvals);
      }
    } catch (error) {
      say(error.message, "error");
    }
  }

  replace(
    main,
    h(
      "div",
      { class: "watch" },
      h("h1", { class: "watch-heading" }, "Waiting on you"),
      status,
      cards,
      h("button", { class: "btn btn-ghost btn-small", type: "button", onclick: load }, "Refresh"),
    ),
  );
  load();
  // Live: the cards follow the events instead of polling; an event that comes while a tap is
  // being sent is taken once the tap is done.
  let soon = 0;
  const stopListening = onEvent((event) => {
    if (!changesAsks(event)) return;
    clearTimeout(soon);
    soon = setTimeout(function again() {
      if (!alive) return;
      if (busy) {
        soon = setTimeout(again, 200);
        return;
      }
      load();
    }, 50);
  });
  return () => {
    alive = false;
    clearTimeout(soon);
    stopListening();
    for (const stop of stops) stop();
  };
}
