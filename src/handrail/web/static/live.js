// The live link: GET /events, the signed-in user's events as one server-sent-event stream.
// Pages listen to it instead of polling: `onEvent(fn)` calls fn with each event
// ({id, kind, userId, historyId, created, data}); a "reload" event means events were missed, so a
// listener reads its state again. The stream is read with fetch (the bearer token goes in a
// header, never a URL); a broken link reconnects with Last-Event-ID, and the reconnection is
// itself announced as a "reload" (what changed meanwhile is read again).

import { API_PREFIX, auth } from "./api.js";

const listeners = new Set();
const state = { controller: null, lastId: null, retryMs: 3000, timer: 0, token: null, connected: false };

/** Call `fn(event)` for each event from now on; returns the function that stops it. */
export function onEvent(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function emit(event) {
  for (const fn of [...listeners]) {
    try {
      fn(event);
    } catch (error) {
      console.error("an event listener failed", error);
    }
  }
}

function setConnected(value) {
  state.connected = value;
  // For people (a status line could show it) and for tests: "on" once the stream is in place.
  document.documentElement.dataset.live = value ? "on" : "off";
}

/** Open the stream for the signed-in user (again, after a sign-in; a no-op when open). */
export function startLive() {
  const token = auth.token;
  if (!token) return;
  if (state.controller && state.token === token) return;
  stopLive();
  state.token = token;
  connect(false);
}

/** Close the stream (sign-out). */
export function stopLive() {
  clearTimeout(state.timer);
  if (state.controller) state.controller.abort();
  state.controller = null;
  state.token = null;
  state.lastId = null;
  setConnected(false);
}

async function connect(again) {
  const controller = new AbortController();
  state.controller = controller;
  const headers = { Accept: "text/event-stream", Authorization: `Bearer ${state.token}` };
  if (state.lastId) headers["Last-Event-ID"] = state.lastId;
  let opened = false;
  try {
    const response = await fetch(API_PREFIX + "/events", {
      headers, signal: controller.signal, cache: "no-store", credentials: "omit",
    });
    if (response.status === 401) {
      // The token is gone: the page's own next call shows the sign-in page.
      state.controller = null;
      setConnected(false);
      return;
    }
    if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
    await read(response.body.getReader(), () => {
      opened = true;
      setConnected(true);
      // Back after a break: whatever the replay does not cover is read again.
      if (again && !state.lastId) emit({ kind: "reload", data: { reason: "reconnected" } });
    });
  } catch (error) {
    if (controller.signal.aborted) return;
  }
  if (state.controller !== controller) return; // stopped, or replaced by a new sign-in
  setConnected(false);
  state.timer = setTimeout(() => connect(true), opened ? 500 : state.retryMs);
}

async function read(reader, onReady) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line === ": ready") onReady();
        else if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        else if (line.startsWith("retry:")) state.retryMs = Number(line.slice(6)) || state.retryMs;
      }
      if (!data.length) continue;
      let event;
      try {
        event = JSON.parse(data.join("\n"));
      } catch {
        continue;
      }
      if (id) state.lastId = id;
      emit(event);
    }
  }
}

/** Whether `event` may change the list of asks waiting on the user. */
export function changesAsks(event) {
  return event.kind.startsWith("ask.") || event.kind === "reload" || event.kind === "history.deleted";
}
