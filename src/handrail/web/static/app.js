// handrail's web UI: sign-in, the chat, the inbox, the compact /watch view, the grants page and
// the connections page.
// Vanilla ES modules over the public HTTP API; the page routes itself from the URL.

import { agentsPage } from "./agents.js";
import { auth, get, getPage, onUnauthorized } from "./api.js";
import { auditPage } from "./audit.js";
import { chatPage } from "./chat.js";
import { connectionsPage } from "./connections.js";
import { deliveriesPage } from "./deliveries.js";
import { h, replace } from "./dom.js";
import { grantsPage } from "./grants.js";
import { inboxPage } from "./inbox.js";
import { changesAsks, onEvent, startLive, stopLive } from "./live.js";
import { notifyAsk, notificationsToggle } from "./notify.js";
import { signInPage } from "./signin.js";
import { watchPage } from "./watch.js";

const root = document.getElementById("app");

const ROUTES = [
  { pattern: /^\/$/, page: chatPage, nav: "chat", title: "Chat" },
  { pattern: /^\/c\/([0-9a-f]{24})$/, page: chatPage, nav: "chat", title: "Chat" },
  { pattern: /^\/inbox$/, page: inboxPage, nav: "inbox", title: "Inbox" },
  { pattern: /^\/watch$/, page: watchPage, nav: "watch", title: "Watch", compact: true },
  { pattern: /^\/grants$/, page: grantsPage, nav: "grants", title: "Grants" },
  { pattern: /^\/connections$/, page: connectionsPage, nav: "connections", title: "Connections" },
  { pattern: /^\/agents$/, page: agentsPage, nav: "agents", title: "Agents" },
  { pattern: /^\/deliveries$/, page: deliveriesPage, nav: "deliveries", title: "Deliveries" },
  { pattern: /^\/audit$/, page: auditPage, nav: "audit", title: "Audit log" },
];

const NAV = [
  { id: "chat", href: "/", label: "Chat" },
  { id: "inbox", href: "/inbox", label: "Inbox" },
  { id: "watch", href: "/watch", label: "Watch" },
  { id: "grants", href: "/grants", label: "Grants" },
  { id: "connections", href: "/connections", label: "Connections" },
  { id: "agents", href: "/agents", label: "Agents" },
  // For admins: the log of webhooks and emails (others reach theirs by its address).
  { id: "deliveries", href: "/deliveries", label: "Deliveries", admin: true },
  { id: "audit", href: "/audit", label: "Audit" },
];

const state = { info: null, cleanup: null, pending: null, pendingMore: false, badge: null, firstRender: true, baseTitle: "handrail", refreshing: 0 };

/** The tab's title: the page's own, after the count of asks waiting, such as "(2) Inbox · handrail". */
function applyTitle() {
  const count = state.pending ? `(${state.pending}${state.pendingMore ? "+" : ""}) ` : "";
  document.title = count + state.baseTitle;
}

/** A page names itself (the count of waiting asks goes in front). */
export function setPageTitle(text) {
  state.baseTitle = text;
  applyTitle();
}

/** The line that says which model answers, in plain words. */
export function modelLine(info) {
  if (!info) return "";
  return info.modelIsAI
    ? `Model: ${info.model} — an AI model; check what it does before you approve it`
    : `Model: ${info.model} — a deterministic script, not AI`;
}

export function navigate(path, { replaceState = false } = {}) {
  if (replaceState) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  render();
}

/** Change the address bar without rendering again (a new conversation got its id). */
export function setUrl(path) {
  if (location.pathname !== path) history.pushState({ quiet: true }, "", path);
}

async function refreshPending() {
  if (!auth.token || !state.info) return;
  try {
    // The first page counts up to 50; more than that shows as "50+".
    const page = await getPage("/histories/pendingAsks");
    state.pending = page.items.length;
    state.pendingMore = Boolean(page.next);
  } catch {
    state.pending = null;
    state.pendingMore = false;
  }
  applyTitle();
  if (state.badge) {
    const count = `${state.pending}${state.pendingMore ? "+" : ""}`;
    state.badge.textContent = state.pending ? count : "";
    state.badge.hidden = !state.pending;
    state.badge.setAttribute("aria-label", `${state.pendingMore ? "more than " + state.pending : state.pending} waiting`);
  }
}

function signOut() {
  auth.clear();
  stopLive();
  state.info = null;
  state.pending = null;
  navigate("/");
}

function header(route) {
  const user = state.info.user;
  state.badge = h("span", { class: "count", hidden: true });
  const nav = h(
    "nav",
    { class: "nav", "aria-label": "Main" },
    h(
      "ul",
      {},
      NAV.filter((item) => !item.admin || user.isAdmin).map((item) =>
        h(
          "li",
          {},
          h(
            "a",
            { href: item.href, "data-link": "", "aria-current": route && route.nav === item.id ? "page" : null },
            item.label,
            item.id === "inbox" ? [" ", state.badge] : null,
          ),
        ),
      ),
    ),
  );
  // The banner holds the top bar and the model line: what model answers is said on every page,
  // inside a landmark (a screen reader's list of regions reaches it).
  return h(
    "header",
    {},
    h(
      "div",
      { class: "topbar" },
      h("a", { class: "brand", href: "/", "data-link": "" }, h("img", { src: "/static/icon.svg", alt: "", width: 24, height: 24 }), h("span", { class: "brand-name" }, "handrail")),
      nav,
      h(
        "div",
        { class: "who" },
        notificationsToggle(),
        h("span", { class: "user" }, "Signed in as ", h("strong", {}, user.id), user.isAdmin ? " (admin)" : ""),
        h("button", { class: "btn btn-ghost btn-small", type: "button", onclick: signOut }, "Sign out"),
      ),
    ),
    h("p", { class: "model-line", dataset: { ai: String(state.info.modelIsAI) } }, modelLine(state.info)),
  );
}

function match(pathname) {
  for (const route of ROUTES) {
    const found = pathname.match(route.pattern);
    if (found) return { route, params: found.slice(1) };
  }
  return null;
}

async function render() {
  if (state.cleanup) {
    state.cleanup();
    state.cleanup = null;
  }
  const focus = !state.firstRender;
  state.firstRender = false;
  if (!auth.token) {
    stopLive();
    state.pending = null;
    setPageTitle("Sign in · handrail");
    state.cleanup = signInPage(root, {
      onSignedIn(info) {
        state.info = info;
        render();
      },
    });
    return;
  }
  if (!state.info) {
    try {
      state.info = await get("/info");
    } catch (error) {
      if (!auth.token) return; // 401: the handler shows the sign-in page
      replace(
        root,
        h(
          "main",
          { id: "main", class: "page" },
          h("h1", {}, "handrail cannot load"),
          h("p", { role: "alert" }, error.message),
          h("button", { class: "btn btn-primary", type: "button", onclick: () => render() }, "Try again"),
        ),
      );
      return;
    }
  }
  startLive();
  const found = match(location.pathname);
  const route = found ? found.route : null;
  setPageTitle(`${route ? route.title : "Not found"} · handrail`);
  document.body.classList.toggle("compact", Boolean(route && route.compact));
  const main = h("main", { id: "main", class: route ? `page page-${route.nav}` : "page", tabindex: "-1" });
  replace(
    root,
    header(route),
    main,
  );
  if (!found) {
    main.append(h("h1", {}, "Not found"), h("p", {}, "This page does not exist. ", h("a", { href: "/", "data-link": "" }, "Go to the chat.")));
    return;
  }
  const ctx = {
    info: state.info,
    params: found.params,
    navigate,
    setUrl,
    refreshPending,
    setTitle: setPageTitle,
  };
  state.cleanup = found.route.page(main, ctx) || null;
  refreshPending();
  if (focus) {
    const heading = main.querySelector("h1");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
    }
  }
}

function onLinkClick(event) {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest("a[data-link]");
  if (!link || link.origin !== location.origin) return;
  event.preventDefault();
  if (link.pathname !== location.pathname) navigate(link.pathname);
}

onUnauthorized(() => {
  if (!auth.token) return;
  auth.clear();
  stopLive();
  state.info = null;
  render();
});
// Another tab signed in or out: this one follows.
window.addEventListener("storage", (event) => {
  if (event.key !== auth.key && event.key !== null) return;
  state.info = null;
  stopLive();
  render();
});
// The count follows the events: an ask created, answered or cancelled anywhere.
onEvent((event) => {
  if (!state.info) return;
  if (event.kind === "ask.created") notifyAsk(event, navigate, state.info.user.id);
  if (changesAsks(event)) {
    clearTimeout(state.refreshing);
    state.refreshing = setTimeout(refreshPending, 50);
  }
});
document.addEventListener("click", onLinkClick);
window.addEventListener("popstate", () => render());
render();
