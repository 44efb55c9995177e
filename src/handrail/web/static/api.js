// The HTTP API, and only that: every call goes to the server's API prefix with the bearer
// token from localStorage (a sign-in lasts across tabs and links until Sign out). Tokens never
// go into a URL.

const meta = document.querySelector('meta[name="handrail-api-prefix"]');
const raw = meta ? meta.getAttribute("content") : null;
/** The API's prefix, such as /api (the server fills it into the page; "" is the root). */
export const API_PREFIX = raw === null || raw.startsWith("__") ? "/api" : raw;

const TOKEN_KEY = "handrail.token";

// Where the calls go and with which token. The web UI uses its own server (API_PREFIX, the
// token from localStorage); the <handrail-chat> element points it at the server it names.
const target = { prefix: API_PREFIX, token: null, getToken: null };

/** Send every call to `base` (a handrail server's API, such as https://h.example/api), with
 * `token`, or the token an async `getToken()` gives for each call (minted or JWT). */
export function configure({ base, token = null, getToken = null }) {
  if (base) target.prefix = String(base).replace(/\/+$/, "");
  target.token = token;
  target.getToken = getToken;
}

async function bearerOf(token) {
  if (token) return token;
  if (target.getToken) return await target.getToken();
  return target.token || auth.token;
}

export const auth = {
  get token() {
    return localStorage.getItem(TOKEN_KEY);
  },
  set(token) {
    localStorage.setItem(TOKEN_KEY, token);
  },
  clear() {
    localStorage.removeItem(TOKEN_KEY);
  },
  /** The storage key, to hear other tabs sign in and out (the "storage" event). */
  key: TOKEN_KEY,
};

let unauthorizedHandler = null;
/** Called with the error whenever the server answers 401 (the token is gone or wrong). */
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

/** An error answer of the API: `status`, and the problem JSON as `problem`
 * ({status, title, detail, code?, fields?, requestId}). */
export class ApiError extends Error {
  constructor(status, problem) {
    const title = (problem && problem.title) || `HTTP ${status}`;
    const detail = problem && problem.detail && problem.detail !== title ? problem.detail : "";
    super(detail ? `${title}: ${detail}` : title);
    this.name = "ApiError";
    this.status = status;
    this.problem = problem || {};
  }

  /** The `{path, code, message, fix}` list of an invalid answer, or []. */
  get fieldErrors() {
    return Array.isArray(this.problem.fields) ? this.problem.fields : [];
  }
}

async function errorOf(response) {
  let problem = {};
  try {
    problem = await response.json();
  } catch {
    problem = { status: response.status, title: response.statusText || `HTTP ${response.status}` };
  }
  const error = new ApiError(response.status, problem);
  if (response.status === 401 && unauthorizedHandler) unauthorizedHandler(error);
  return error;
}

async function send(method, path, body, { signal, token, headers: extra } = {}) {
  const headers = { Accept: "application/json", ...(extra || {}) };
  const bearer = await bearerOf(token);
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  let payload;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(target.prefix + path, {
      method, headers, body: payload, signal, cache: "no-store", credentials: "omit",
    });
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new ApiError(0, {
      title: "The server cannot be reached",
      detail: "Check that handrail is still running, then try again.",
    });
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

/** Call the API and return the `data` of its `{data, requestId}` answer. */
export async function api(method, path, body, options = {}) {
  const response = await send(method, path, body, options);
  const parsed = await response.json();
  return parsed.data;
}

export const get = (path, options) => api("GET", path, undefined, options);

/** GET a file the API makes (an export), with the token like every call: a Blob. */
export async function getBlob(path, options = {}) {
  const response = await send("GET", path, undefined, { ...options, headers: { Accept: "*/*" } });
  return response.blob();
}

/** One page of a paged list (GET /histories, GET /histories/pendingAsks): `{items, next}`,
 * where `next` is the path of the next page from the `Link: <...>; rel="next"` header, to pass
 * to getPage again, or null on the last page. */
export async function getPage(path, options = {}) {
  const response = await send("GET", path, undefined, options);
  const parsed = await response.json();
  return { items: parsed.data, next: nextPath(response.headers.get("Link")) };
}

/** The API path (without API_PREFIX) of a Link header's rel="next" URL, or null. Only the
 * path and query are kept: the call goes to this page's own server, like every other. */
export function nextPath(link) {
  if (!link) return null;
  for (const part of link.split(",")) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (!match || !/(^|;)\s*rel="?next"?\s*(;|$)/i.test(match[2])) continue;
    const base = new URL(target.prefix, location.href);
    const url = new URL(match[1], base);
    if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname + "/")) return null;
    return url.pathname.slice(base.pathname.length) + url.search;
  }
  return null;
}

/** POST /prompt and yield each server-sent event as it arrives (one JSON object per
 * `data:` line). Errors before the stream starts throw an ApiError. */
export async function* streamPrompt(body, { signal } = {}) {
  const response = await send("POST", "/prompt", body, { signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const events = function* (final) {
    buffer = buffer.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0 || (final && buffer.trim())) {
      const chunk = end >= 0 ? buffer.slice(0, end) : buffer;
      buffer = end >= 0 ? buffer.slice(end + 2) : "";
      const data = chunk
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield JSON.parse(data);
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      yield* events(false);
    }
    buffer += decoder.decode();
    yield* events(true);
  } finally {
    reader.releaseLock();
  }
}

/** Upload one file for a `files` answer: POST /files/upload -> {id, filename, mimeType, size}. */
export async function uploadFile(file) {
  const form = new FormData();
  form.append("file", file, file.name);
  return api("POST", "/files/upload", form);
}
