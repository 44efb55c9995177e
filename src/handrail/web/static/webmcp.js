// handrail's WebMCP polyfill: one classic <script src=".../static/webmcp.js"> before the page's
// own script is all a page needs.
//
// When the browser has no WebMCP, it installs navigator.modelContext (and document.modelContext,
// the same object) with registerTool(tool), unregisterTool(name), provideContext({tools}) (which
// replaces the whole set) and clearContext(). When the browser has its own, the page keeps using
// it, and the polyfill reads what the page registers by wrapping those methods.
//
// Either way the tools are readable by handrail's <handrail-chat> element through
// globalThis.handrailWebMCP: list() gives {name, description, inputSchema, annotations} of each
// tool, get(name) the tool itself (with its execute), and "toolschange" events say when the set
// changed. Nothing leaves the page from here: the element sends the list with each prompt.
(function () {
  "use strict";
  if (globalThis.handrailWebMCP) return;

  const tools = new Map();
  const events = new EventTarget();

  function changed() {
    events.dispatchEvent(new Event("toolschange"));
  }

  function checked(tool) {
    if (!tool || typeof tool !== "object") throw new TypeError("registerTool needs a tool object: {name, description, inputSchema, execute}.");
    if (typeof tool.name !== "string" || !tool.name) throw new TypeError("A tool needs a name (a non-empty string).");
    if (typeof tool.execute !== "function") throw new TypeError(`The tool ${tool.name} needs an execute function.`);
    if (tool.description !== undefined && typeof tool.description !== "string") {
      throw new TypeError(`The description of ${tool.name} must be a string.`);
    }
    if (tool.inputSchema !== undefined && (typeof tool.inputSchema !== "object" || tool.inputSchema === null)) {
      throw new TypeError(`The inputSchema of ${tool.name} must be a JSON Schema object.`);
    }
    if (tool.annotations !== undefined && (typeof tool.annotations !== "object" || tool.annotations === null)) {
      throw new TypeError(`The annotations of ${tool.name} must be an object of hints.`);
    }
    return tool;
  }

  function add(tool) {
    checked(tool);
    if (tools.has(tool.name)) {
      throw new DOMException(`A tool named ${tool.name} is registered already; unregister it first.`, "InvalidStateError");
    }
    tools.set(tool.name, tool);
  }

  function remove(name) {
    const had = tools.delete(String(name));
    if (had) changed();
    return had;
  }

  function replaceAll(context) {
    const list = context && Array.isArray(context.tools) ? context.tools : [];
    const names = new Set();
    for (const tool of list) {
      checked(tool);
      if (names.has(tool.name)) throw new DOMException(`Two tools are named ${tool.name}.`, "InvalidStateError");
      names.add(tool.name);
    }
    tools.clear();
    for (const tool of list) tools.set(tool.name, tool);
    changed();
  }

  const native = navigator.modelContext || document.modelContext || null;
  let context = native;

  if (native) {
    // Read the browser's own: every call still goes to it; the polyfill keeps a copy.
    const wrap = (method, mirror) => {
      const original = typeof native[method] === "function" ? native[method].bind(native) : null;
      if (!original) return;
      try {
        native[method] = function (...args) {
          const result = original(...args);
          mirror(...args);
          return result;
        };
      } catch {
        // A read-only method: the page's tools are then not readable by handrail.
      }
    };
    wrap("registerTool", (tool) => {
      try {
        add(tool);
        changed();
      } catch {
        // The browser accepted it; a copy that does not check out is left out.
      }
    });
    wrap("unregisterTool", (name) => remove(name));
    wrap("provideContext", (ctx) => {
      try {
        replaceAll(ctx);
      } catch {
        // As above.
      }
    });
    wrap("clearContext", () => replaceAll({ tools: [] }));
  } else {
    context = Object.freeze({
      registerTool(tool) {
        add(tool);
        changed();
        const name = tool.name;
        return { unregister: () => remove(name) };
      },
      unregisterTool(name) {
        remove(name);
      },
      provideContext(ctx) {
        replaceAll(ctx);
      },
      clearContext() {
        replaceAll({ tools: [] });
      },
    });
    for (const target of [navigator, document]) {
      try {
        Object.defineProperty(target, "modelContext", { value: context, configurable: true, enumerable: true });
      } catch {
        // Some browsers freeze navigator; document.modelContext still works then.
      }
    }
  }
  if (native && !document.modelContext) {
    try {
      Object.defineProperty(document, "modelContext", { value: native, configurable: true, enumerable: true });
    } catch {
      // Not needed: the page reads navigator.modelContext.
    }
  }

  function describe(tool) {
    const out = { name: tool.name, description: typeof tool.description === "string" ? tool.description : "" };
    if (tool.inputSchema) out.inputSchema = JSON.parse(JSON.stringify(tool.inputSchema));
    if (tool.annotations) out.annotations = JSON.parse(JSON.stringify(tool.annotations));
    return out;
  }

  globalThis.handrailWebMCP = Object.freeze({
    /** Whether the browser has its own WebMCP (the polyfill then only reads it). */
    native: Boolean(native),
    /** The registry the page uses. */
    context,
    /** {name, description, inputSchema?, annotations?} of every registered tool, in order. */
    list: () => [...tools.values()].map(describe),
    /** The registered tool of that name (with its execute), or null. */
    get: (name) => tools.get(name) || null,
    /** Call fn() whenever a tool is registered or unregistered; returns a function that stops. */
    onChange(fn) {
      events.addEventListener("toolschange", fn);
      return () => events.removeEventListener("toolschange", fn);
    },
  });
})();
