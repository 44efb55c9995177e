// The inbox: every ask waiting on the user, across conversations, newest first
// (GET /inbox, a page at a time: "Show more" follows the Link header's next page; a server
// without it gets GET /histories/pendingAsks and each conversation's view). It acts: each ask
// shows its real gate (approval, confirmation with its countdown, permission, question, ...)
// and "Answer here" opens its full card in place (answered through POST /histories/{id}/turn).
// The search box asks the server (GET /inbox?q=, as the person stops typing), so it finds asks
// beyond the pages loaded; the toolbar's other filters (kind, gate, agent, conversation) sort
// through the loaded ones. Approvals and confirmations can be selected and denied at once. The
// list follows the events (live.js).

import { ApiError, api, get, getPage } from "./api.js";
import { approvalsSection } from "./approvals.js";
import { createCard } from "./cards/index.js";
import { ago, h, replace } from "./dom.js";
import { changesAsks, onEvent } from "./live.js";
import { gateLine } from "./watch_gate.js";

const KIND_LABELS = {
  choice: "Choose",
  confirm: "Confirm",
  markdown: "Edit",
  form: "Form",
  files: "Files",
};

const GATE_LABELS = {
  question: "Question",
  clarify: "Clarify",
  approval: "Approval",
  confirmation: "Confirmation",
  permission: "Permission",
  selection: "Choice",
  elicitation: "Request from an app",
  "page-tool": "Page",
};

/** How long the search waits after the last key before it asks the server (ms). */
const SEARCH_DELAY_MS = 250;

/** The audit log's surface of an answer made here (the turn route's own default is
 * "headless"). */
const WEB = { headers: { "X-Handrail-Via": "web" } };

/** Gates a bulk deny may answer: both take {action: "accept", content: {confirmed: false}}. */
const DENIABLE = new Set(["approval", "confirmation"]);

function gateOfItem(item) {
  const pending = item.view && item.view.pendingAsk;
  if (pending && pending.origin) return pending.origin;
  return pending && pending.kind === "clarify" ? "clarify" : "question";
}

/** An ask's key: toolCallIds are unique only within their conversation. */
function keyOf(item) {
  return `${item.historyId}:${item.toolCallId}`;
}

function option(value, label) {
  return h("option", { value }, label);
}

export function inboxPage(main, ctx) {
  const list = h("ul", { class: "inbox-list", "aria-label": "Waiting on you" });
  const status = h("p", { class: "muted", role: "status" }, "Loading…");
  const more = h("button", { class: "btn btn-secondary btn-small inbox-more", type: "button", hidden: true, onclick: loadMore }, "Show more");
  const said = h("p", { class: "inbox-said", "aria-live": "polite", tabindex: "-1" });
  let alive = true;
  let next = null;
  let items = [];
  let shownQuery = ""; // the search whose answer the list shows
  let loading = 0; // a newer load makes the answers of older ones stale
  // Each ask's element, kept while it waits: a card being filled in survives a reload.
  const elements = new Map(); // keyOf(item) -> {el, stop}
  const open = new Set(); // the asks whose card is open ("Answer here")
  const selected = new Set();
  const approvals = approvalsSection(ctx.info);

  // --- the toolbar ----------------------------------------------------------------------
  const search = h("input", { class: "input inbox-search", type: "search", placeholder: "Search titles and prompts", "aria-label": "Search titles and prompts", maxlength: 200, oninput: searchSoon });
  const kind = h("select", { class: "input", "aria-label": "Kind", onchange: show }, option("", "Any kind"), Object.entries(KIND_LABELS).map(([value, label]) => option(value, label)));
  const gate = h("select", { class: "input", "aria-label": "Gate", onchange: show }, option("", "Any gate"), Object.entries(GATE_LABELS).map(([value, label]) => option(value, label)));
  const agent = h("select", { class: "input", "aria-label": "Agent", onchange: show }, option("", "Any agent"));
  const conversation = h("select", { class: "input", "aria-label": "Conversation", onchange: show }, option("", "Any conversation"));
  const denySelected = h("button", { class: "btn btn-secondary btn-small inbox-deny", type: "button", disabled: true, onclick: denyAll }, "Deny selected");

  function fillChoices(select, values) {
    const current = select.value;
    const first = select.firstElementChild;
    replace(select, first, [...values].sort((a, b) => a[1].localeCompare(b[1])).map(([value, label]) => option(value, label)));
    select.value = [...values].some(([value]) => value === current) ? current : "";
  }

  function matches(item) {
    if (kind.value && item.kind !== kind.value) return false;
    if (gate.value && gateOfItem(item) !== gate.value) return false;
    if (agent.value && (!item.view || item.view.agent !== agent.value)) return false;
    return !conversation.value || item.historyId === conversation.value;
  }

  // --- the search: the server's (GET /inbox?q=), once the person stops typing ---------------
  let searching = 0;
  let source = "/inbox"; // GET /histories/pendingAsks on a server without /inbox (no search)
  function query() {
    // Control characters (a pasted tab or line break) are refused by the server: spaces here.
    return search.value.replace(/[\u0000-\u001f\u007f]+/g, " ").trim().slice(0, 200);
  }
  function searchSoon() {
    clearTimeout(searching);
    searching = setTimeout(() => alive && load(), SEARCH_DELAY_MS);
  }
  function firstPage() {
    const q = query();
    return source === "/inbox" && q ? `/inbox?q=${encodeURIComponent(q)}` : source;
  }

  // --- one item ---------------------------------------------------------------------------
  function cardCtx(item) {
    return {
      me: ctx.info.user,
      heldCall: () => null,
      safetyClass: () => null,
      maxUploadBytes: Number.isInteger(ctx.info.maxUploadBytes) ? ctx.info.maxUploadBytes : null,
      answer: async (card, envelope) => {
        const result = await api(
          "POST",
          `/histories/${item.historyId}/turn`,
          { askResponse: { toolCallId: item.toolCallId, ...envelope } },
          WEB,
        );
        card.resolve(envelope);
        said.textContent = result && result.text ? `Answered. The agent said: ${result.text}` : "Answered.";
        load();
      },
      onConflict: () => setTimeout(() => alive && load(), 300),
    };
  }

  function inboxItem(item) {
    const pending = item.view && item.view.pendingAsk;
    const gateKind = gateOfItem(item);
    const line = gateLine(pending || { kind: item.kind });
    const box = DENIABLE.has(gateKind)
      ? h("input", {
          type: "checkbox",
          class: "inbox-select",
          "aria-label": `Select “${item.simple.title || item.title || "this ask"}”`,
          checked: selected.has(keyOf(item)),
          onchange: (event) => {
            if (event.target.checked) selected.add(keyOf(item));
            else selected.delete(keyOf(item));
            denySelected.disabled = !selected.size;
          },
        })
      : null;
    const slot = h("div", { class: "inbox-card" });
    const toggle = h("button", { class: "btn btn-secondary btn-small inbox-answer", type: "button", "aria-expanded": "false" }, "Answer here");
    function openCard() {
      if (!pending) return;
      const card = createCard({ ...pending, status: "pending" }, cardCtx(item));
      replace(slot, card.el);
      toggle.setAttribute("aria-expanded", "true");
      toggle.textContent = "Close";
      open.add(keyOf(item));
    }
    toggle.addEventListener("click", () => {
      if (open.has(keyOf(item))) {
        open.delete(keyOf(item));
        replace(slot);
        toggle.setAttribute("aria-expanded", "false");
        toggle.textContent = "Answer here";
      } else openCard();
    });
    toggle.hidden = !pending;
    const el = h(
      "li",
      { class: "inbox-item", dataset: { historyId: item.historyId, toolCallId: item.toolCallId, gate: gateKind } },
      h(
        "div",
        { class: "inbox-head" },
        box,
        h(
          "a",
          { href: `/c/${item.historyId}`, "data-link": "", class: "inbox-link" },
          h("span", { class: `badge badge-${item.kind}` }, KIND_LABELS[item.kind] || item.kind),
          h("span", { class: "inbox-title", dir: "auto" }, item.simple.title || item.title || "A question"),
        ),
      ),
      line.el,
      h("p", { class: "inbox-text", dir: "auto" }, item.simple.text),
      h(
        "p",
        { class: "inbox-meta" },
        item.title ? ["In “", h("bdi", {}, item.title), "” · "] : null,
        item.view && item.view.agent ? [item.view.agent, " · "] : null,
        h("time", { datetime: item.created }, ago(item.created)),
      ),
      h("div", { class: "card-actions" }, toggle),
      slot,
    );
    if (open.has(keyOf(item))) openCard();
    elements.set(keyOf(item), { el, stop: line.stop });
    return el;
  }

  function elementOf(item) {
    const kept = elements.get(keyOf(item));
    return kept ? kept.el : inboxItem(item);
  }

  function forget(present) {
    for (const [id, kept] of [...elements]) {
      if (present.has(id)) continue;
      kept.stop();
      elements.delete(id);
      open.delete(id);
    }
  }

  // --- the list ---------------------------------------------------------------------------
  function show() {
    const shown = items.filter(matches);
    replace(list, shown.map(elementOf));
    const filtered = shown.length !== items.length;
    const count = next ? `${items.length}+` : String(items.length);
    const plural = items.length === 1 && !next ? "" : "s";
    if (shownQuery) {
      status.textContent = items.length
        ? `${count} ask${plural} waiting on you ${plural ? "match" : "matches"} “${shownQuery}”.${filtered ? ` ${shown.length} shown.` : ""}`
        : `No ask waiting on you matches “${shownQuery}”.`;
    } else {
      status.textContent = items.length
        ? `${count} ask${plural} waiting on you.${filtered ? ` ${shown.length} shown.` : ""}`
        : "Nothing is waiting on you.";
    }
    more.hidden = !next;
    const present = new Set(items.map(keyOf));
    forget(present);
    for (const id of [...selected]) if (!present.has(id)) selected.delete(id);
    denySelected.disabled = !selected.size;
  }

  /** The items of a page with their views: GET /inbox has them; pendingAsks needs a read of
   * each conversation. */
  async function withViews(page) {
    if (source === "/inbox") {
      return page.map((item) => ({ ...item, view: { agent: item.agent, pendingAsk: item.pendingAsk || null } }));
    }
    return Promise.all(
      page.map(async (item) => {
        try {
          const view = await get(`/histories/${item.historyId}`);
          const pending = view.pendingAsk && view.pendingAsk.toolCallId === item.toolCallId ? view.pendingAsk : null;
          return { ...item, view: { agent: view.agent, title: view.title, pendingAsk: pending } };
        } catch {
          return { ...item, view: null };
        }
      }),
    );
  }

  function refreshChoices() {
    fillChoices(agent, new Map(items.filter((i) => i.view && i.view.agent).map((i) => [i.view.agent, i.view.agent])));
    fillChoices(conversation, new Map(items.map((i) => [i.historyId, i.title || "Untitled"])));
  }

  async function fetchFirst() {
    try {
      return await getPage(firstPage());
    } catch (error) {
      if (source !== "/inbox" || !(error instanceof ApiError) || error.status !== 404) throw error;
      source = "/histories/pendingAsks"; // an older server: no /inbox, and no search
      search.hidden = true;
      return getPage(source);
    }
  }

  async function load() {
    const run = ++loading;
    clearTimeout(searching);
    const q = source === "/inbox" ? query() : "";
    try {
      const page = await fetchFirst();
      const full = await withViews(page.items);
      if (!alive || run !== loading) return;
      next = page.next;
      items = full;
      shownQuery = q;
      refreshChoices();
      show();
      // For tests (and anyone waiting): the list shows what the server said at least once.
      list.dataset.loaded = "true";
      list.dataset.query = q;
      ctx.refreshPending();
    } catch (error) {
      if (alive && run === loading) status.textContent = error.message;
    }
  }

  async function loadMore() {
    if (!next) return;
    const run = loading;
    more.disabled = true;
    try {
      const page = await getPage(next);
      const full = await withViews(page.items);
      if (!alive || run !== loading) return;
      next = page.next;
      // Pages never overlap (keyset), but a conversation is never listed twice either way.
      const known = new Set(items.map((item) => item.historyId));
      items = items.concat(full.filter((item) => !known.has(item.historyId)));
      refreshChoices();
      show();
    } catch (error) {
      status.textContent = error.message;
    } finally {
      more.disabled = false;
    }
  }

  async function denyAll() {
    const chosen = items.filter((item) => selected.has(keyOf(item)));
    if (!chosen.length) return;
    denySelected.disabled = true;
    const results = await Promise.allSettled(
      chosen.map((item) =>
        api(
          "POST",
          `/histories/${item.historyId}/turn`,
          { askResponse: { toolCallId: item.toolCallId, action: "accept", content: { confirmed: false } } },
          WEB,
        ),
      ),
    );
    // A 409: answered elsewhere first (left alone). Any other failure (the server unreachable,
    // a 503) keeps its ask selected, to deny again.
    const answeredElsewhere = results.filter((r) => r.status === "rejected" && r.reason && r.reason.status === 409).length;
    const unsent = results.filter((r) => r.status === "rejected" && !(r.reason && r.reason.status === 409));
    selected.clear();
    chosen.forEach((item, index) => {
      const result = results[index];
      if (result.status === "rejected" && !(result.reason && result.reason.status === 409)) selected.add(keyOf(item));
    });
    const denied = chosen.length - answeredElsewhere - unsent.length;
    if (!answeredElsewhere && !unsent.length) {
      said.textContent = `Denied ${chosen.length}: ${chosen.length === 1 ? "that call does" : "those calls do"} not run.`;
    } else {
      const parts = [`Denied ${denied} of ${chosen.length}.`];
      if (answeredElsewhere) parts.push(`${answeredElsewhere === 1 ? "One was" : `${answeredElsewhere} were`} answered elsewhere first.`);
      if (unsent.length) {
        const why = unsent[0].reason && unsent[0].reason.message ? unsent[0].reason.message : String(unsent[0].reason);
        parts.push(`${unsent.length === 1 ? "One was" : `${unsent.length} were`} not sent (${why}); ${unsent.length === 1 ? "it stays" : "they stay"} selected: press Deny selected again.`);
      }
      said.textContent = parts.join(" ");
    }
    // The button is off while nothing is selected: the line that says what happened takes the
    // focus rather than the page's body.
    if (document.activeElement === denySelected || document.activeElement === document.body) said.focus({ preventScroll: true });
    load();
  }

  replace(
    main,
    h(
      "div",
      { class: "narrow" },
      h("h1", {}, "Inbox"),
      h("p", { class: "lead" }, "Questions the agents are waiting on, newest first. Answer them here, or open one in its conversation."),
      h("div", { class: "toolbar" }, status, h("button", { class: "btn btn-secondary btn-small", type: "button", onclick: load }, "Refresh")),
      h("div", { class: "inbox-filters", role: "search" }, search, kind, gate, agent, conversation, denySelected),
      said,
      list,
      more,
      approvals.el,
    ),
  );
  load();
  // Live: an ask created, answered or cancelled anywhere (another tab, device or server
  // process) shows here at once.
  let soon = 0;
  let soonApprovals = 0;
  const stopListening = onEvent((event) => {
    if (!changesAsks(event)) return;
    clearTimeout(soon);
    soon = setTimeout(() => alive && load(), 50);
    // A gate that names approvers (this user may be one): "Waiting for your approval" too.
    if (event.kind === "reload" || (event.approvers && event.approvers.length)) {
      clearTimeout(soonApprovals);
      soonApprovals = setTimeout(() => alive && approvals.load(), 50);
    }
  });
  return () => {
    alive = false;
    clearTimeout(soon);
    clearTimeout(searching);
    clearTimeout(soonApprovals);
    stopListening();
    forget(new Set());
  };
}
