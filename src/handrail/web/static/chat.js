// The chat: the user's conversations, a transcript that streams the reply of POST /prompt, and
// one card per ask. On load the transcript is rebuilt from the history's rows: an ask's call row
// carries ask.status, and its answer is the tool-result row with the same toolCallId.

import { ApiError, api, get, getPage, streamPrompt } from "./api.js";
import { reasonWords } from "./cards/card.js";
import { createCard } from "./cards/index.js";
import { ago, h, humanize, json, replace, uid } from "./dom.js";
import { onEvent } from "./live.js";
import { MarkdownStream, renderMarkdown } from "./markdown.js";

/** What a running turn does, in words (the data of a turn.progress event): a tool by its
 * title for the person (toolTitle), never the name the model called (toolName), which only
 * an older server's event lacks a title for. */
function progressText(progress) {
  if (!progress) return "Working…";
  if (progress.phase === "thinking") return "Thinking…";
  const title = progress.toolTitle || (progress.toolName && humanize(progress.toolName));
  if (progress.phase === "tool" && title) return `Running ${title}…`;
  if (progress.phase === "stopping") return "Stopping…";
  return "Working…";
}

/** How long a search waits after the last key before it asks the server (ms). */
const SEARCH_DELAY_MS = 250;

/** The history view's `running` ({turnId, phase, tool?: {toolName, toolTitle, toolCallId},
 * since}) as the data of a turn.progress event. */
function progressOf(running) {
  const tool = running.tool && typeof running.tool === "object" ? running.tool : { toolName: running.tool };
  return { phase: running.phase, toolName: tool.toolName || undefined, toolTitle: tool.toolTitle || undefined };
}

function lowerKeys(object) {
  return Object.fromEntries(Object.entries(object).map(([key, value]) => [key.toLowerCase(), value]));
}

/** Scroll a new piece of the transcript into view, unless the user scrolled up to read. */
function reveal(el, block = "nearest") {
  if (typeof el.scrollIntoView === "function") el.scrollIntoView({ block, behavior: "auto" });
}

/** Whether a call's result says it did not run or failed (a denial is never a success; a
 * confirmed request that then failed shows as failed). */
function failedResult(result, isError) {
  if (isError) return true;
  if (!result || typeof result !== "object") return false;
  if (result.approved === false || result.type === "execution-denied") return true;
  const inner = result.editedByUser ? result.result : result;
  return Boolean(inner && typeof inner === "object" && inner.status === "error");
}

function resultText(result, isError) {
  if (result && typeof result === "object" && (result.approved === false || result.type === "execution-denied")) {
    return `Did not run (${reasonWords(result.reason)}).`;
  }
  if (result && typeof result === "object" && result.editedByUser) {
    const verb = failedResult(result.result, false) ? "Failed" : "Returned";
    return `Ran with your changes (${Object.keys(result.changes || {}).join(", ")}). ${verb}: ${json(result.result)}`;
  }
  return `${failedResult(result, isError) ? "Failed" : "Returned"}: ${json(result)}`;
}

export function chatPage(main, ctx) {
  const { info } = ctx;
  const me = info.user.id;
  const state = {
    historyId: ctx.params[0] || null,
    history: null,
    cards: new Map(),
    tools: new Map(),
    calls: new Map(), // toolCallId -> {toolName, args}
    agentEl: null,
    agentStream: null,
    streaming: false,
    safety: new Map(),
    flash: null,
    alive: true,
    readOnly: false,
    // Why the composer is off: "admin" (reading another user's conversation) or "unavailable"
    // (the conversation is missing, deleted or not the caller's).
    readOnlyReason: null,
    resolvedByStream: new Set(),
    // A turn of this conversation running (here or in another tab or process), as the events
    // say: its progress, and whether Stop was pressed.
    running: false,
    stopping: false,
    // What the progress line shows now (a turn.progress event's data).
    progress: null,
    // Turns this tab streams itself: their turn.finished events need no reload.
    ownTurns: 0,
    // The first render of a stored conversation came during this page's turn: it runs after.
    loadAfterTurn: false,
  };

  const titleId = uid("chat-title");
  const title = h("h1", { id: titleId, class: "chat-title", tabindex: "-1", dir: "auto" }, "New conversation");
  // Rename and delete the open conversation (PATCH and DELETE /histories/{id}).
  const renameInput = h("input", { class: "input rename-input", maxlength: 200, "aria-label": "New title" });
  const renameForm = h(
    "form",
    {
      class: "rename-form",
      hidden: true,
      onsubmit: (event) => {
        event.preventDefault();
        rename(renameInput.value.trim());
      },
    },
    renameInput,
    h("button", { class: "btn btn-primary btn-small", type: "submit" }, "Save"),
    h("button", { class: "btn btn-ghost btn-small", type: "button", onclick: () => showRename(false) }, "Cancel"),
  );
  const deleteConfirm = h(
    "p",
    { class: "delete-confirm", role: "alert", hidden: true },
    "Delete this conversation? This cannot be undone. ",
    h("button", { class: "btn btn-danger btn-small", type: "button", onclick: () => removeConversation() }, "Delete it"),
    " ",
    h("button", { class: "btn btn-ghost btn-small", type: "button", onclick: () => (deleteConfirm.hidden = true) }, "Keep it"),
  );
  const titleActions = h(
    "div",
    { class: "title-actions", hidden: true },
    h("button", { class: "btn btn-ghost btn-small", type: "button", onclick: () => showRename(true) }, "Rename"),
    h("button", { class: "btn btn-ghost btn-small", type: "button", onclick: () => (deleteConfirm.hidden = false) }, "Delete"),
  );
  const listSearch = h("input", {
    class: "input conversation-search",
    type: "search",
    placeholder: "Search conversations",
    "aria-label": "Search conversations",
    maxlength: 200,
    // The server searches (GET /histories?q=: titles and messages), once typing stops.
    oninput: () => {
      clearTimeout(listState.searching);
      listState.searching = setTimeout(() => state.alive && refreshList(), SEARCH_DELAY_MS);
    },
  });
  const transcript = h("div", {
    class: "transcript",
    role: "log",
    "aria-live": "polite",
    "aria-relevant": "additions",
    "aria-label": "Conversation",
  });
  const list = h("ul", { class: "conversation-list" });
  // GET /histories is paged: "Show more" follows the Link header's next page.
  const more = h("button", { class: "btn btn-ghost btn-small conversations-more", type: "button", hidden: true, onclick: () => showMore() }, "Show more");
  const listState = { next: null, shown: 0, run: 0, searching: 0, query: "" };
  const composerId = uid("composer");
  const composer = h("textarea", {
    id: composerId,
    class: "input composer-input",
    rows: 2,
    placeholder: "Message the agent",
    "aria-describedby": `${composerId}-hint`,
    onkeydown: (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    },
  });
  const hint = h("p", { class: "helper", id: `${composerId}-hint` }, "Enter sends; Shift+Enter starts a new line.");
  const send = h("button", { class: "btn btn-primary", type: "submit" }, "Send");
  const progressLine = h("span", { class: "turn-progress-text" }, "Working…");
  const stopButton = h(
    "button",
    { class: "btn btn-secondary btn-small turn-stop", type: "button", onclick: () => stopTurn() },
    "Stop",
  );
  const progress = h(
    "div",
    { class: "turn-progress", role: "status", "aria-live": "polite", hidden: true },
    h("span", { class: "spinner", "aria-hidden": "true" }),
    progressLine,
    stopButton,
  );
  const form = h(
    "form",
    {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault();
        const text = composer.value.trim();
        if (!text || state.streaming || state.readOnly) return;
        composer.value = "";
        sendPrompt(text);
      },
    },
    h("label", { for: composerId, class: "sr-only" }, "Message"),
    composer,
    send,
    hint,
  );

  const playbook = info.playbook || [];
  // A note the server sends with a prompt (such as a stand-in) is shown under the list.
  const notes = lowerKeys(info.playbookNotes || {});
  function playbookList() {
    if (!playbook.length) return null;
    const footnotes = playbook.filter((prompt) => notes[prompt.toLowerCase()]);
    return h(
      "div",
      { class: "playbook-box" },
      h(
        "ul",
        { class: "playbook" },
        playbook.map((prompt) =>
          h(
            "li",
            {},
            h(
              "button",
              { class: "btn btn-secondary btn-prompt", type: "button", onclick: () => startNew(prompt) },
              prompt,
              notes[prompt.toLowerCase()] ? h("span", { "aria-hidden": "true" }, " *") : null,
            ),
          ),
        ),
      ),
      footnotes.map((prompt) => h("p", { class: "helper" }, `* “${prompt}”: ${notes[prompt.toLowerCase()]}`)),
    );
  }

  const tryPrompts = playbook.length
    ? h(
        "details",
        { class: "try-prompts" },
        h("summary", {}, "Try a prompt"),
        info.modelIsAI ? null : h("p", { class: "helper" }, "The scripted model follows these prompts to a fixed script: each leads to one kind of ask."),
        playbookList(),
      )
    : null;

  const sidebar = h(
    "aside",
    { class: "sidebar", "aria-label": "Conversations" },
    h(
      "details",
      { class: "conversations", open: window.matchMedia("(min-width: 56rem)").matches },
      h("summary", {}, "Conversations"),
      h("button", { class: "btn btn-secondary new-chat", type: "button", onclick: () => ctx.navigate("/") }, "New conversation"),
      listSearch,
      list,
      more,
    ),
  );
  replace(
    main,
    h(
      "div",
      { class: "chat-layout" },
      ctx.sidebar === false ? null : sidebar,
      h("section", { class: "chat", "aria-labelledby": titleId }, title, titleActions, renameForm, deleteConfirm, transcript, progress, tryPrompts, form),
    ),
  );

  // --- cards ------------------------------------------------------------------------------

  const cardCtx = {
    answer: (card, envelope) =>
      run({ historyId: state.historyId, askResponse: { toolCallId: card.toolCallId, ...envelope } }, card),
    onConflict: () => {
      state.flash = "That ask was already answered elsewhere (another tab or device). The conversation was reloaded to show how it ended.";
      setTimeout(() => state.alive && load(), 600);
    },
    safetyClass: (toolName) => state.safety.get(toolName) || null,
    maxUploadBytes: Number.isInteger(info.maxUploadBytes) ? info.maxUploadBytes : null,
    me: info.user,
    // The call a gate holds is named by its id (two calls of one tool keep their own arguments).
    heldCall: (ask) => (ask.heldToolCallId ? state.calls.get(ask.heldToolCallId) || null : null),
    // A page-tool call: the <handrail-chat> element runs it on its page (the web UI cannot).
    runPageTool: ctx.runPageTool || null,
  };

  function addCard(ask, { live = false } = {}) {
    closeText();
    const card = createCard(ask, cardCtx);
    state.cards.set(ask.toolCallId, card);
    transcript.append(h("div", { class: "msg msg-ask" }, card.el));
    if (live) {
      reveal(card.el);
      // The new card takes the focus when nothing else holds it (the card itself, so no phone
      // keyboard pops up), or its first control when the person just answered a card.
      const active = document.activeElement;
      if (active && active.closest(".card:not(.card-pending)")) card.focus();
      else if (!active || active === document.body) card.el.focus({ preventScroll: true });
    }
    return card;
  }

  // --- transcript pieces -----------------------------------------------------------------

  function empty() {
    if (tryPrompts) tryPrompts.hidden = true;
    transcript.replaceChildren(
      h(
        "div",
        { class: "empty-state" },
        h("p", {}, "Start a conversation: write a message below", playbook.length ? ", or try one of these:" : "."),
        playbookList(),
      ),
    );
  }

  function clearEmpty() {
    const placeholder = transcript.querySelector(".empty-state");
    if (placeholder) placeholder.remove();
  }

  function userMessage(text) {
    clearEmpty();
    closeText();
    const el = h("div", { class: "msg msg-user" }, h("span", { class: "sr-only" }, "You: "), h("div", { class: "msg-text", dir: "auto" }, text));
    transcript.append(el);
    return el;
  }

  function agentMessage(text) {
    closeText();
    transcript.append(h("div", { class: "msg msg-agent" }, h("span", { class: "sr-only" }, "Agent: "), h("div", { class: "msg-text markdown-body" }, renderMarkdown(text))));
  }

  function streamText(delta) {
    clearEmpty();
    if (!state.agentEl) {
      state.agentEl = h("div", { class: "msg-text markdown-body" });
      state.agentStream = new MarkdownStream(state.agentEl);
      const el = h("div", { class: "msg msg-agent", "aria-busy": "true" }, h("span", { class: "sr-only" }, "Agent: "), state.agentEl);
      transcript.append(el);
      reveal(el);
    }
    // Only the open last block is rendered again; the finished ones stay as they are.
    state.agentStream.append(delta);
  }

  function closeText() {
    if (state.agentStream) state.agentStream.flush();
    if (state.agentEl) state.agentEl.parentElement.removeAttribute("aria-busy");
    state.agentEl = null;
    state.agentStream = null;
  }

  function toolCall(call) {
    closeText();
    state.calls.set(call.toolCallId, { toolName: call.toolName, args: call.args });
    const result = h("div", { class: "tool-result" }, h("span", { class: "muted" }, "Waiting…"));
    const el = h(
      "details",
      { class: "msg tool", dataset: { toolCallId: call.toolCallId } },
      h("summary", {}, "Tool ", h("code", {}, call.toolName)),
      h("pre", { class: "tool-args" }, JSON.stringify(call.args ?? {}, null, 2)),
      result,
    );
    state.tools.set(call.toolCallId, { el, result });
    transcript.append(el);
  }

  function toolResult({ toolCallId, toolName, result, isError }) {
    closeText();
    let entry = state.tools.get(toolCallId);
    if (!entry) {
      toolCall({ toolCallId, toolName, args: {} });
      entry = state.tools.get(toolCallId);
    }
    entry.result.replaceChildren(resultText(result, isError));
    entry.el.classList.toggle("tool-error", failedResult(result, isError));
  }

  function errorLine(message) {
    closeText();
    transcript.append(h("p", { class: "msg msg-error", role: "alert" }, "The turn failed: ", message));
  }

  function notice(message) {
    const el = h("p", { class: "transcript-notice", role: "status", tabindex: "-1" }, message);
    transcript.prepend(el);
    // A reload replaced what held the focus (a card answered elsewhere, the Stop button): the
    // notice that says why takes it, rather than the page's body.
    const active = document.activeElement;
    if (!active || active === document.body || !active.isConnected) el.focus({ preventScroll: true });
  }

  function showRename(on) {
    renameForm.hidden = !on;
    if (on) {
      renameInput.value = state.history && state.history.title ? state.history.title : title.textContent;
      renameInput.focus();
      renameInput.select();
    }
  }

  async function rename(text) {
    if (!state.historyId || !text) return;
    try {
      const history = await api("PATCH", `/histories/${state.historyId}`, { title: text });
      if (state.history) state.history.title = history.title;
      setTitle(history.title);
      showRename(false);
      refreshList();
    } catch (error) {
      errorLine(error.message);
    }
  }

  async function removeConversation() {
    if (!state.historyId) return;
    try {
      await api("DELETE", `/histories/${state.historyId}`);
      deleteConfirm.hidden = true;
      ctx.navigate("/");
    } catch (error) {
      errorLine(error.message);
    }
  }

  /** The search as the server takes it: trimmed, at most 200 characters, no control
   * characters (a pasted line break becomes a space). */
  function listQuery() {
    return listSearch.value.replace(/[\u0000-\u001f\u007f]+/g, " ").trim().slice(0, 200);
  }

  function setTitle(text) {
    titleActions.hidden = !state.historyId || state.readOnly;
    title.textContent = text || (state.historyId ? "Untitled conversation" : "New conversation");
    if (ctx.documentTitle === false) return;
    if (ctx.setTitle) ctx.setTitle(`${title.textContent} · handrail`);
    else document.title = `${title.textContent} · handrail`;
  }

  /** The page's tools the agent was not offered, each with the server's reason. */
  function pageToolsNotice(report) {
    if (ctx.onPageTools) ctx.onPageTools(report);
    for (const refused of report.refused || []) {
      transcript.append(
        h("p", { class: "msg msg-notice", role: "status" }, `The page's tool “${refused.name}” was not offered to the agent: ${refused.reason}`),
      );
    }
  }

  // --- streaming ---------------------------------------------------------------------------

  function handle(event, answering) {
    if ("text" in event) streamText(event.text);
    else if (event.toolCall) {
      toolCall(event.toolCall);
      // The turn.progress event of this call may have come first with the tool's title: the
      // stream's call (which carries none) keeps it.
      const call = event.toolCall;
      const heard = state.progress && state.progress.toolCallId === call.toolCallId ? state.progress : null;
      if (!state.stopping) showProgress({ phase: "tool", toolName: call.toolName, toolTitle: heard && heard.toolTitle, toolCallId: call.toolCallId });
    } else if (event.toolResult) {
      toolResult(event.toolResult);
      if (!state.stopping) showProgress({ phase: "thinking" });
    }
    else if (event.ask) {
      state.historyId = event.historyId || state.historyId;
      addCard({ ...event.ask, status: "pending" }, { live: true });
    } else if (event.askResolved) {
      const { toolCallId, action } = event.askResolved;
      const card = state.cards.get(toolCallId);
      state.resolvedByStream.add(toolCallId);
      if (card) {
        let response = { action };
        if (answering === card && card.lastEnvelope && card.lastEnvelope.action === action) response = card.lastEnvelope;
        else if (action === "cancel") response = { action, reason: "user_sent_message" };
        card.resolve(response);
      }
    } else if (event.pageTools) pageToolsNotice(event.pageTools);
    else if ("error" in event) errorLine(event.error);
    else if (event.done) {
      closeText();
      const fresh = !state.historyId || location.pathname !== `/c/${event.historyId}`;
      state.historyId = event.historyId;
      if (fresh) ctx.setUrl(`/c/${event.historyId}`);
      setTitle(event.title || title.textContent);
      if (event.pendingAsk) {
        const card = state.cards.get(event.pendingAsk.toolCallId);
        if (!card || !card.pending) {
          // The answer was undone (the model failed before saying anything): show the ask again.
          state.flash = "The agent failed before it could continue, so the ask is open again.";
          setTimeout(() => state.alive && load(), 0);
        }
      }
    }
  }

  function showProgress(data) {
    state.running = true;
    state.progress = data || null;
    if (data && data.phase === "stopping") state.stopping = true;
    progressLine.textContent = state.stopping ? "Stopping…" : progressText(data);
    stopButton.disabled = state.stopping || state.readOnly;
    stopButton.hidden = state.readOnly;
    progress.hidden = false;
  }

  function hideProgress() {
    state.running = false;
    state.stopping = false;
    progress.hidden = true;
  }

  async function stopTurn() {
    if (!state.historyId || state.stopping) return;
    // This tab's own turn reloads when its stream ends; another tab's turn reloads here.
    const own = state.streaming;
    showProgress({ phase: "stopping" });
    try {
      await api("POST", `/histories/${state.historyId}/stop`);
    } catch (error) {
      errorLine(error.message);
    }
    if (!own && state.alive) {
      hideProgress();
      state.flash = "You stopped the turn. What it did before is kept below.";
      load();
    }
  }

  /** `sent` ({el, text}): the message of a prompt, put back in the composer (and marked as
   * not sent) when the server never started its turn, so nothing typed is lost. */
  async function run(body, answering = null, sent = null) {
    state.streaming = true;
    state.ownTurns += 1;
    showProgress({ phase: "thinking" });
    updateComposer();
    let started = false;
    try {
      for await (const event of streamPrompt(body)) {
        if (!state.alive) break;
        started = true;
        handle(event, answering);
      }
    } catch (error) {
      if (!started) state.ownTurns = Math.max(0, state.ownTurns - 1); // no turn ran
      if (!started && answering) throw error;
      if (!started && sent) unsent(sent, error);
      else if (!started && error instanceof ApiError) errorLine(error.message);
      else errorLine(`The connection broke: ${error.message}. Reload to see how the turn ended.`);
    } finally {
      closeText();
      state.streaming = false;
      const stopped = state.stopping;
      hideProgress();
      if (stopped && state.alive) {
        state.flash = "You stopped the turn. What it did before is kept below.";
        load();
      } else if (state.loadAfterTurn && state.alive) load();
      state.loadAfterTurn = false;
      updateComposer();
      refreshList();
      ctx.refreshPending();
    }
  }

  function sendPrompt(text) {
    const el = userMessage(text);
    reveal(el);
    if (tryPrompts) tryPrompts.hidden = false;
    const body = { prompt: text };
    if (state.historyId) body.historyId = state.historyId;
    if (ctx.promptBody) Object.assign(body, ctx.promptBody(body));
    return run(body, null, { el, text });
  }

  /** A message the server refused or never got (no turn ran): marked as not sent, and back
   * in the composer (unless the person has typed another since) to send again. */
  function unsent(sent, error) {
    closeText();
    sent.el.classList.add("msg-unsent");
    sent.el.append(h("span", { class: "msg-unsent-note" }, "Not sent"));
    const restored = !composer.value.trim();
    if (restored) composer.value = sent.text;
    transcript.append(
      h(
        "p",
        { class: "msg msg-error", role: "alert" },
        "Your message was not sent: ",
        error && error.message ? error.message : String(error),
        restored ? " It is back in the message box, to send again." : "",
      ),
    );
    if (restored && document.activeElement === document.body) composer.focus({ preventScroll: true });
  }

  function startNew(prompt) {
    state.historyId = null;
    state.history = null;
    state.cards.clear();
    state.tools.clear();
    state.calls.clear();
    state.readOnly = false;
    state.readOnlyReason = null;
    transcript.replaceChildren();
    setTitle("");
    if (location.pathname !== "/") history.pushState({ quiet: true }, "", "/");
    markCurrent();
    sendPrompt(prompt);
  }

  function pendingCard() {
    for (const card of state.cards.values()) if (card.pending) return card;
    return null;
  }

  function updateComposer() {
    composer.disabled = state.readOnly;
    send.disabled = state.streaming || state.readOnly;
    if (state.readOnly && state.readOnlyReason === "unavailable") {
      hint.textContent = "This conversation cannot be opened. Start a new conversation to send a message.";
    } else if (state.readOnly) {
      hint.textContent = "You are reading another user's conversation as an admin: you cannot speak in it.";
    } else if (pendingCard()) {
      hint.textContent = "An ask is open above. Sending a message cancels it.";
    } else {
      hint.textContent = "Enter sends; Shift+Enter starts a new line.";
    }
  }

  // --- loading -----------------------------------------------------------------------------

  function renderHistory(history) {
    state.history = history;
    state.cards.clear();
    state.tools.clear();
    state.calls.clear();
    transcript.replaceChildren();
    state.readOnly = history.userId !== me;
    state.readOnlyReason = state.readOnly ? "admin" : null;
    setTitle(history.title);
    const rows = history.rows || [];
    const results = new Map();
    for (const row of rows) if (row.type === "tool-result") results.set(row.toolCallId, row);
    const asks = new Set(rows.filter((r) => r.type === "tool-call" && r.ask).map((r) => r.toolCallId));
    const pending = history.pendingAsk;
    for (const row of rows) {
      if (row.type === "user") userMessage(row.text);
      else if (row.type === "assistant") {
        if (row.text) agentMessage(row.text);
      } else if (row.type === "tool-call" && row.ask) {
        const result = results.get(row.toolCallId);
        const ask = {
          toolCallId: row.toolCallId,
          kind: row.ask.kind,
          input: row.args || {},
          origin: row.ask.origin,
          toolName: row.ask.origin ? row.toolName : undefined,
          status: row.ask.status,
          response: result ? result.result : undefined,
        };
        if (pending && pending.toolCallId === row.toolCallId) {
          Object.assign(ask, pending, { status: "pending" });
          if (state.readOnly) ask.actionable = false;
        } else if (ask.status === "pending") {
          ask.actionable = false;
        } else if (!ask.response) {
          ask.response = { action: ask.status === "cancelled" ? "cancel" : "accept" };
        }
        addCard(ask);
      } else if (row.type === "tool-call") {
        toolCall(row);
        const result = results.get(row.toolCallId);
        if (result) toolResult(result);
      } else if (row.type === "tool-result" && !asks.has(row.toolCallId) && !state.tools.has(row.toolCallId)) {
        toolResult(row);
      }
    }
    if (pending && !state.cards.has(pending.toolCallId)) addCard({ ...pending, status: "pending", actionable: !state.readOnly });
    if (!rows.length && !pending) empty();
    else if (tryPrompts) tryPrompts.hidden = false;
    const open = pendingCard();
    if (open) reveal(open.el, "center");
    else if (transcript.lastElementChild) reveal(transcript.lastElementChild, "end");
    if (state.flash) {
      notice(state.flash);
      state.flash = null;
    }
    // Opened mid-turn: what the turn does now shows at once, not only from its next event.
    if (history.running) showProgress(progressOf(history.running));
    else if (!state.streaming && "running" in history) hideProgress();
    updateComposer();
  }

  async function load() {
    if (!state.historyId) {
      setTitle("");
      empty();
      updateComposer();
      return;
    }
    transcript.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    try {
      renderHistory(await get(`/histories/${state.historyId}`));
    } catch (error) {
      const text =
        error instanceof ApiError && error.status === 404
          ? "This conversation does not exist, or it was deleted."
          : error instanceof ApiError && error.status === 403
            ? "This conversation belongs to another user."
            : error.message;
      transcript.replaceChildren(h("p", { class: "msg msg-error", role: "alert" }, text));
      state.readOnly = true;
      state.readOnlyReason = "unavailable";
      updateComposer();
    }
  }

  function markCurrent() {
    for (const link of list.querySelectorAll("a")) {
      if (link.dataset.historyId === state.historyId) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
  }

  function conversationItem(item) {
    // A search also finds conversations by their messages: say so when the title does not
    // show why one is listed.
    const q = listState.query.toLowerCase();
    const byMessage = q && !(item.title || "").toLowerCase().includes(q);
    return h(
      "li",
      { dataset: byMessage ? { found: "messages" } : {} },
      h(
        "a",
        { href: `/c/${item.id}`, "data-link": "", dataset: { historyId: item.id } },
        h("span", { class: "conversation-title", dir: "auto" }, item.title || "Untitled"),
        h(
          "span",
          { class: "conversation-meta" },
          item.pendingAsk ? h("span", { class: "badge badge-waiting" }, "Waiting on you") : null,
          byMessage ? h("span", { class: "conversation-found" }, "Found in its messages") : null,
          h("span", {}, ago(item.updated)),
        ),
      ),
    );
  }

  async function refreshList() {
    // Again as many as were shown (at least one page, at most 200) from the newest.
    clearTimeout(listState.searching);
    const limit = Math.min(200, Math.max(50, listState.shown));
    const run = ++listState.run;
    const q = listQuery();
    try {
      const page = await getPage(`/histories?limit=${limit}${q ? `&q=${encodeURIComponent(q)}` : ""}`);
      if (!state.alive || run !== listState.run) return;
      listState.next = page.next;
      listState.shown = page.items.length;
      listState.query = q;
      const none = q ? `No conversation matches “${q}”.` : "No conversations yet.";
      replace(list, page.items.length ? page.items.map(conversationItem) : h("li", { class: "muted" }, none));
      more.hidden = !page.next;
      markCurrent();
      // For tests (and anyone waiting): the list shows the server's answer to this search.
      list.dataset.loaded = "true";
      list.dataset.query = q;
    } catch {
      // The list is a convenience; the conversation itself still works.
    }
  }

  async function showMore() {
    if (!listState.next) return;
    const run = listState.run;
    more.disabled = true;
    try {
      const page = await getPage(listState.next);
      if (!state.alive || run !== listState.run) return;
      listState.next = page.next;
      const fresh = page.items.filter((item) => !list.querySelector(`a[data-history-id="${CSS.escape(item.id)}"]`));
      listState.shown += fresh.length;
      list.append(...fresh.map(conversationItem));
      more.hidden = !page.next;
      markCurrent();
    } catch {
      // As above: the next click tries again.
    } finally {
      more.disabled = false;
    }
  }

  async function loadSafety() {
    try {
      const data = await get("/permissions");
      for (const connection of data.connections || []) {
        for (const tool of connection.tools || []) state.safety.set(tool.name, tool.safetyClass);
      }
    } catch {
      // Servers without the permissions routes: approvals then follow only `destructive`.
    }
  }

  // Live: what another tab, device or server process does in this conversation shows here at
  // once (an ask answered elsewhere, a turn running, Stop); the list follows renames and deletes.
  let reloadSoon = 0;
  function reloadLater() {
    clearTimeout(reloadSoon);
    reloadSoon = setTimeout(() => state.alive && !state.streaming && load(), 50);
  }
  // The turns this page saw end: a late event of one of them never shows its line again.
  const endedTurns = new Set();
  const stopListening = onEvent((event) => {
    if (event.kind.startsWith("history.") || event.kind === "reload" || event.kind === "turn.finished") refreshList();
    // A new conversation this tab is streaming learns its id before the turn ends (for Stop).
    if (event.kind === "history.created" && state.streaming && !state.historyId) state.historyId = event.historyId;
    if (event.kind === "reload") {
      if (!state.streaming) reloadLater();
      return;
    }
    if (!state.historyId || event.historyId !== state.historyId) return;
    const turnId = event.data && event.data.turnId;
    if (event.kind === "turn.started" || event.kind === "turn.progress") {
      if (!endedTurns.has(turnId)) showProgress(event.data);
    } else if (event.kind === "turn.finished" || event.kind === "turn.failed") {
      if (turnId) endedTurns.add(turnId);
      // This tab's own turn shows its end from its stream; a "stopping" line that reached this
      // tab after that stream had ended goes with the turn's last event all the same.
      const own = state.ownTurns > 0;
      if (own) state.ownTurns -= 1;
      if (!state.streaming) {
        hideProgress();
        if (!own) reloadLater();
      }
    } else if (event.kind === "ask.answered" || event.kind === "ask.cancelled") {
      // Answered here, the stream shows it; answered elsewhere, the card shows how it ended.
      const card = state.cards.get(event.data.toolCallId);
      if (!state.streaming && card && card.pending) reloadLater();
    } else if (event.kind === "ask.created") {
      if (!state.streaming && !state.cards.has(event.data.ask.toolCallId)) reloadLater();
    } else if (event.kind === "history.renamed") {
      setTitle(event.data.title);
    } else if (event.kind === "history.deleted" && !state.streaming) {
      reloadLater();
    }
  });

  // The first render. A new conversation shows at once: were it to wait for the tools' safety
  // classes, a prompt sent meanwhile would have its turn's conversation named (history.created)
  // and that render would load it before the turn stored a row, wiping the prompt and the
  // turn's first lines. A stored one renders once the classes are in, or after this page's
  // turn when one is streaming by then (its own events show it meanwhile).
  const safety = loadSafety();
  if (!state.historyId) load();
  else {
    safety.then(() => {
      if (state.streaming) state.loadAfterTurn = true;
      else load();
    });
  }
  refreshList();
  return () => {
    state.alive = false;
    clearTimeout(reloadSoon);
    clearTimeout(listState.searching);
    stopListening();
    for (const card of state.cards.values()) card.dispose();
  };
}
