// The live link: GET /events, the signed-in user's events as one server-sent-event stream.
// Pages listen to it instead of polling: `onEvent(fn)` calls fn with each event
// ({id, kind, userId, historyId, created, data}); a "reload" event means events were missed, so a
// listener reads its state again. The stream is read with fetch (the bearer token goes in a
// header, never a URL); a broken link reconnects with Last-Event-ID, and the reconnection is
// itself announced as a "reload" (what changed meanwhile is read again).
//
// All the tabs of one browser share ONE stream (a browser opens about 6 connections per host
// on HTTP/1.1, so a stream per tab would leave a seventh tab hanging). The tabs signed in with
// the same token elect a leader with the Web Locks API: the tab holding the lock
// "handrail.events.<key>" reads the stream and relays each event, and whether the stream is
// open, over the BroadcastChannel of the same name; the others listen there. When the leader
// goes (its tab closes), the lock passes to a waiting tab, which opens the stream with the
// last event id it heard (Last-Event-ID), so the server replays what came meanwhile (or says
// "reload"). Sign-out closes the stream, leaves the channel and drops the lock in every tab.
// A browser without Web Locks or BroadcastChannel opens a stream per tab, as before.

import { API_PREFIX, auth } from "./api.js";

const listeners = new Set();
const state = {
  controller: null,
  lastId: null,
  retryMs: 3000,
  timer: 0,
  token: null,
  connected: false,
  // Sharing the stream between tabs:
  channel: null, // the BroadcastChannel of this token's tabs
  lockAbort: null, // aborts this tab's wait for the leader's lock
  release: null, // gives the lock up (this tab leads)
  leader: false,
  heardLeader: false, // another tab led before: taking over is a reconnection
};

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

/** Tell the other tabs (when this one leads). */
function relay(message) {
  if (state.leader && state.channel) state.channel.postMessage(message);
}

/** An event read from the stream: this tab's listeners, then the other tabs'. */
function deliver(event, id) {
  if (id) state.lastId = id;
  emit(event);
  relay({ type: "event", id: id || null, event });
}

function setConnected(value) {
  state.connected = value;
  // For people (a status line could show it) and for tests: "on" once the stream is in place.
  document.documentElement.dataset.live = value ? "on" : "off";
  // For tests and the curious: whether this tab reads the stream or hears it from another.
  document.documentElement.dataset.liveRole = state.channel ? (state.leader ? "leader" : "follower") : "own";
  relay({ type: "live", on: value, lastId: state.lastId });
}

/** A short, non-secret name for a token: the tabs of one sign-in share a lock and channel. */
function keyOf(token) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < token.length; i += 1) {
    hash ^= token.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

function canShare() {
  return typeof BroadcastChannel === "function" && Boolean(navigator.locks && navigator.locks.request);
}

/** Open the stream for the signed-in user (again, after a sign-in; a no-op when open). */
export function startLive() {
  const token = auth.token;
  if (!token) return;
  if (state.token === token && (state.controller || state.channel)) return;
  stopLive();
  state.token = token;
  if (!canShare()) {
    connect(false);
    return;
  }
  const name = `handrail.events.${keyOf(token)}`;
  const channel = new BroadcastChannel(name);
  const lockAbort = new AbortController();
  state.channel = channel;
  state.lockAbort = lockAbort;
  channel.onmessage = (message) => {
    if (state.channel === channel) heard(message.data);
  };
  navigator.locks
    .request(name, { signal: lockAbort.signal }, () => {
      // Stopped while waiting, or signed out in another tab whose "storage" event has not
      // reached this one yet (the leader that heard it first let the lock go): give it up.
      if (state.channel !== channel || auth.token !== state.token) return undefined;
      // This tab leads until it stops (sign-out) or closes: the lock is held until then.
      return new Promise((resolve) => {
        state.release = resolve;
        state.leader = true;
        connect(state.heardLeader);
      });
    })
    .catch(() => {}); // aborted: this tab stopped before it led
  setConnected(false);
  channel.postMessage({ type: "hello" }); // the leader answers with whether the stream is open
}

/** A message of the other tabs of this sign-in. */
function heard(message) {
  if (!message || typeof message !== "object") return;
  if (message.type === "hello") {
    if (state.leader) relay({ type: "live", on: state.connected, lastId: state.lastId });
    return;
  }
  if (state.leader) return; // only a leader's messages count, and this tab is it
  if (message.type === "live") {
    state.heardLeader = true;
    if (message.lastId) state.lastId = message.lastId;
    setConnected(Boolean(message.on));
  } else if (message.type === "event" && message.event) {
    state.heardLeader = true;
    if (message.id) state.lastId = message.id;
    emit(message.event);
  }
}

/** Close the stream (sign-out): this tab's, and its part in the shared one. */
export function stopLive() {
  clearTimeout(state.timer);
  if (state.controller) state.controller.abort();
  state.controller = null;
  if (state.leader) relay({ type: "live", on: false, lastId: state.lastId });
  if (state.release) state.release();
  if (state.lockAbort) state.lockAbort.abort();
  if (state.channel) state.channel.close();
  state.channel = null;
  state.lockAbort = null;
  state.release = null;
  state.leader = false;
  state.heardLeader = false;
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
      if (again && !state.lastId) deliver({ kind: "reload", data: { reason: "reconnected" } }, null);
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
      deliver(event, id);
    }
  }
}

/** Whether `event` may change the list of asks waiting on the user. */
export function changesAsks(event) {
  return event.kind.startsWith("ask.") || event.kind === "reload" || event.kind === "history.deleted";
}
