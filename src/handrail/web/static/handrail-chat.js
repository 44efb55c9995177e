// <handrail-chat>: handrail's chat as a custom element for any web page (an ES module, no build
// step, no framework). It is the web UI's own chat, cards and gates (chat.js, cards/), talking to
// the handrail server it names:
//
//   <script src="https://handrail.example/static/webmcp.js"></script>   (before the page's script)
//   <script type="module" src="https://handrail.example/static/handrail-chat.js"></script>
//   <handrail-chat server="https://handrail.example" token="..." agent="helper"></handrail-chat>
//
// Attributes: `server` (the handrail base URL; default: where this module came from), `token`
// (a bearer token), `agent` (the agent of new conversations), `api-prefix` (default /api). A host
// app that mints tokens or holds a JWT sets the `getToken` property to an async function instead
// of `token`; it is called before each request.
//
// The tools the page registers with WebMCP (navigator.modelContext, through webmcp.js) go with
// every prompt as `pageTools`; when the agent calls one and the policy lets it run, the element
// runs the tool's execute here, with the call's arguments checked against its input schema, and
// sends the result. Tools the server refused are named in the chat and in the console.

import { configure, get, onUnauthorized } from "./api.js";
import { chatPage } from "./chat.js";
import { h, replace } from "./dom.js";

const HERE = new URL(".", import.meta.url);

/** What is wrong with `value` for a (simple) JSON Schema, as sentences; [] when it fits.
 * The server checked the arguments already; this is the page's own check before execute. */
export function schemaErrors(schema, value, path = "arguments") {
  if (!schema || typeof schema !== "object") return [];
  const errors = [];
  const types = schema.type === undefined ? [] : [].concat(schema.type);
  const typeOf = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v);
  if (types.length) {
    const actual = typeOf(value);
    const fits = types.some((t) => t === actual || (t === "number" && actual === "integer"));
    if (!fits) return [`${path} must be ${types.join(" or ")}`];
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((v) => JSON.stringify(v) === JSON.stringify(value))) {
    errors.push(`${path} must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`);
  }
  if (typeof value === "string") {
    if (Number.isInteger(schema.minLength) && value.length < schema.minLength) errors.push(`${path} is too short`);
    if (Number.isInteger(schema.maxLength) && value.length > schema.maxLength) errors.push(`${path} is too long`);
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) errors.push(`${path} is below ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum) errors.push(`${path} is above ${schema.maximum}`);
  }
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const name of schema.required || []) if (!(name in value)) errors.push(`${path}.${name} is required`);
    const properties = schema.properties || {};
    for (const [name, item] of Object.entries(value)) {
      if (name in properties) errors.push(...schemaErrors(properties[name], item, `${path}.${name}`));
      else if (schema.additionalProperties === false) errors.push(`${path}.${name} is not a property`);
    }
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => errors.push(...schemaErrors(schema.items, item, `${path}[${i}]`)));
  return errors;
}

function textResult(text, isError = false) {
  const result = { content: [{ type: "text", text }] };
  if (isError) result.isError = true;
  return result;
}

/** A tool's return value as a WebMCP result ({content: [...], isError?}). */
export function asResult(value) {
  if (value && typeof value === "object" && Array.isArray(value.content)) {
    const out = { content: value.content };
    if (typeof value.isError === "boolean") out.isError = value.isError;
    if (value.structuredContent && typeof value.structuredContent === "object") out.structuredContent = value.structuredContent;
    return out;
  }
  if (value === undefined) return textResult("");
  return textResult(typeof value === "string" ? value : JSON.stringify(value));
}

class HandrailChat extends HTMLElement {
  constructor() {
    super();
    this.root = this.attachShadow({ mode: "open" });
    this.cleanup = null;
    this.ran = new Set(); // the page-tool calls this page has started
    this.started = false;
  }

  static get observedAttributes() {
    return ["server", "token", "agent"];
  }

  connectedCallback() {
    if (!this.started) {
      this.started = true;
      queueMicrotask(() => this.start());
    }
  }

  disconnectedCallback() {
    if (this.cleanup) this.cleanup();
    this.cleanup = null;
    this.started = false;
  }

  attributeChangedCallback(name, before, after) {
    if (this.started && this.isConnected && before !== null && before !== after) this.start();
  }

  get server() {
    const given = this.getAttribute("server");
    return (given ? new URL(given, location.href) : new URL("..", HERE)).href.replace(/\/+$/, "");
  }

  get registry() {
    return globalThis.handrailWebMCP || null;
  }

  get storageKey() {
    return `handrail-chat:${this.server}:${this.getAttribute("agent") || ""}:${this.user || ""}`;
  }

  async start() {
    if (this.cleanup) this.cleanup();
    this.cleanup = null;
    const prefix = this.getAttribute("api-prefix") ?? "/api";
    configure({
      base: this.server + prefix,
      token: this.getAttribute("token"),
      getToken: typeof this.getToken === "function" ? () => this.getToken() : null,
    });
    // A named region, not a second `main`: the page that embeds the chat has its own.
    const main = h("section", { class: "page page-chat hc-main", part: "chat", "aria-label": "Chat with the agent" });
    replace(
      this.root,
      h("link", { rel: "stylesheet", href: new URL("style.css", HERE).href }),
      h("link", { rel: "stylesheet", href: new URL("handrail-chat.css", HERE).href }),
      h("div", { class: "hc-root" }, main),
    );
    onUnauthorized((error) => this.fail(main, `Signing in to handrail failed: ${error.message}`));
    // The web UI's own links (the Grants page, a conversation) open on the handrail server.
    this.root.addEventListener("click", (event) => {
      const link = event.target.closest && event.target.closest("a[data-link]");
      if (!link) return;
      event.preventDefault();
      window.open(new URL(link.getAttribute("href"), this.server + "/").href, "_blank", "noopener");
    });
    let info;
    try {
      info = await get("/info");
    } catch (error) {
      this.fail(main, `handrail cannot load: ${error.message}`);
      return;
    }
    this.user = info.user.id;
    this.open(main, info, localStorage.getItem(this.storageKey));
  }

  fail(main, message) {
    replace(main, h("p", { class: "msg msg-error", role: "alert" }, message));
  }

  open(main, info, historyId) {
    if (this.cleanup) this.cleanup();
    const agent = this.getAttribute("agent");
    const remember = (id) => {
      if (id) localStorage.setItem(this.storageKey, id);
      else localStorage.removeItem(this.storageKey);
    };
    const toolbar = h(
      "div",
      { class: "hc-toolbar" },
      h("span", { class: "hc-user" }, "Signed in as ", h("strong", {}, info.user.id)),
      h(
        "button",
        {
          class: "btn btn-secondary btn-small",
          type: "button",
          onclick: () => {
            remember(null);
            this.open(main, info, null);
          },
        },
        "New conversation",
      ),
    );
    const body = h("div", { class: "hc-body" });
    replace(main, toolbar, body);
    const ctx = {
      info: { ...info, playbook: [] },
      params: [historyId || undefined],
      sidebar: false,
      documentTitle: false,
      navigate: () => {
        remember(null);
        this.open(main, info, null);
      },
      setUrl: (path) => remember(path.split("/").pop()),
      refreshPending: () => {},
      promptBody: (sent) => {
        const extra = {};
        if (agent && !sent.historyId) extra.agent = agent;
        const registry = this.registry;
        if (registry) extra.pageTools = { origin: location.origin, tools: registry.list() };
        return extra;
      },
      onPageTools: (report) => {
        for (const refused of report.refused || []) {
          console.error(`handrail: the page's tool "${refused.name}" was not offered to the agent: ${refused.reason}`);
        }
      },
      runPageTool: (ask) => this.runPageTool(ask),
    };
    this.cleanup = chatPage(body, ctx) || null;
  }

  /** The page's tool `name`, waiting a little for a page that registers its tools late. */
  async toolNamed(name, waitMs = 3000) {
    const registry = this.registry;
    if (!registry) return null;
    if (registry.get(name)) return registry.get(name);
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(null), waitMs);
      const stop = registry.onChange(() => {
        if (registry.get(name)) finish(registry.get(name));
      });
      function finish(found) {
        clearTimeout(timer);
        stop();
        resolve(found);
      }
    });
  }

  /** Run one page-tool call here, once per page: the result to send, or null when another
   * card of this page runs it already. */
  async runPageTool(ask) {
    if (this.ran.has(ask.toolCallId)) return null;
    this.ran.add(ask.toolCallId);
    const name = ask.toolName;
    const tool = await this.toolNamed(name);
    if (!tool) {
      return textResult(`The page has no tool named ${name} any more, so it did not run. Tell the user to reload the page.`, true);
    }
    const args = ask.preview && typeof ask.preview === "object" ? ask.preview : {};
    const problems = schemaErrors(tool.inputSchema || { type: "object" }, args);
    if (problems.length) {
      return textResult(`The arguments of ${name} do not fit its input schema, so it did not run: ${problems.join("; ")}.`, true);
    }
    try {
      const client = { requestUserInteraction: async (callback) => callback() };
      return asResult(await tool.execute(args, client));
    } catch (error) {
      const message = error && error.message ? error.message : String(error);
      console.error(`handrail: the page's tool ${name} threw:`, error);
      return textResult(`The page's tool ${name} failed: ${message}`, true);
    }
  }
}

if (!customElements.get("handrail-chat")) customElements.define("handrail-chat", HandrailChat);

export { HandrailChat };
