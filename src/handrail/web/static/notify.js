// Browser notifications, opt-in: the header's "Notify me" button asks the browser for
// permission once, and from then on a new ask shows a notification (unless the person is
// looking at its conversation). Clicking one opens the conversation. The choice is kept in
// localStorage, per browser; "Notifications on" turns them off again.

import { h } from "./dom.js";

const KEY = "handrail.notify";

function supported() {
  return typeof window.Notification === "function";
}

/** Whether new asks show a notification. */
export function notificationsOn() {
  return supported() && Notification.permission === "granted" && localStorage.getItem(KEY) === "on";
}

function label() {
  if (!supported()) return null;
  if (Notification.permission === "denied") return "Notifications blocked";
  return notificationsOn() ? "Notifications on" : "Notify me";
}

/** The header's button: turns notifications on (asking the browser first) and off. */
export function notificationsToggle() {
  if (!supported()) return null;
  const button = h("button", { class: "btn btn-ghost btn-small notify-toggle", type: "button" });
  const show = () => {
    button.textContent = label();
    button.setAttribute("aria-pressed", String(notificationsOn()));
    button.disabled = Notification.permission === "denied";
    button.title =
      Notification.permission === "denied"
        ? "The browser blocks notifications from this site; allow them in its site settings."
        : notificationsOn()
          ? "New asks show a notification. Click to stop them."
          : "Show a notification when an agent asks you something.";
  };
  button.addEventListener("click", async () => {
    if (notificationsOn()) {
      localStorage.removeItem(KEY);
    } else {
      const answer = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
      if (answer === "granted") localStorage.setItem(KEY, "on");
    }
    show();
  });
  show();
  return button;
}

/** Show the notification of an ``ask.created`` event, when they are on and the person is not
 * looking at that conversation (`me`: the signed-in user; another user's ask is one they may
 * approve, answered in the inbox). */
export function notifyAsk(event, navigate, me = null) {
  if (!notificationsOn()) return;
  // An approver's ask (another user's conversation) is answered in the inbox.
  const mine = !me || event.userId === me;
  const path = mine ? `/c/${event.historyId}` : "/inbox";
  if (document.visibilityState === "visible" && location.pathname === path) return;
  const ask = (event.data && event.data.ask) || {};
  const simple = ask.simple || {};
  const notification = new Notification(simple.title || "An agent is asking you", {
    body: simple.text || "Open handrail to answer.",
    tag: ask.toolCallId || event.id,
  });
  notification.onclick = () => {
    window.focus();
    navigate(path);
    notification.close();
  };
}
