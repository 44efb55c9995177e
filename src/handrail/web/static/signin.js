// Sign-in: a token, or (in the demo) one click per demo user. The token is kept in
// localStorage: it never goes into a URL, it lasts across tabs and links, and Sign out (in any
// tab) ends it everywhere.

import { ApiError, auth, get } from "./api.js";
import { h, replace, uid } from "./dom.js";

export function signInPage(root, { onSignedIn }) {
  const tokenId = uid("token");
  const error = h("p", { class: "form-error", role: "alert", hidden: true });
  const token = h("input", {
    id: tokenId,
    class: "input",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": `${tokenId}-help`,
  });
  const demo = h("section", { class: "demo-users", "aria-labelledby": "demo-heading", hidden: true });

  async function signIn(value) {
    error.hidden = true;
    const candidate = value.trim();
    if (!candidate) {
      error.textContent = "Enter your token.";
      error.hidden = false;
      token.focus();
      return;
    }
    try {
      const info = await get("/info", { token: candidate });
      auth.set(candidate);
      onSignedIn(info);
    } catch (failure) {
      error.textContent =
        failure instanceof ApiError && failure.status === 401
          ? "This server does not know that token. Check it and try again."
          : failure.message;
      error.hidden = false;
      token.focus();
    }
  }

  replace(
    root,
    h(
      "main",
      { id: "main", class: "page page-signin", tabindex: "-1" },
      h("h1", {}, "Sign in to handrail"),
      h("p", { class: "lead" }, "handrail puts you in the loop of an agent's tool calls: it asks you, and waits for your answer."),
      demo,
      h(
        "form",
        {
          class: "signin-form",
          novalidate: true,
          onsubmit: (event) => {
            event.preventDefault();
            signIn(token.value);
          },
        },
        h("label", { for: tokenId, class: "field-label" }, "Token"),
        h("p", { class: "helper", id: `${tokenId}-help` }, "The bearer token of your user in the server's configuration."),
        token,
        error,
        h("div", { class: "card-actions" }, h("button", { class: "btn btn-primary", type: "submit" }, "Sign in")),
      ),
    ),
  );

  get("/demo", { token: "" })
    .then((data) => {
      const users = (data && data.users) || [];
      if (!users.length) return;
      replace(
        demo,
        h("h2", { id: "demo-heading" }, "Demo users"),
        h("p", {}, "This server runs the demo. Its users and tokens are public:"),
        h(
          "div",
          { class: "demo-buttons" },
          users.map((user) =>
            h(
              "button",
              { class: "btn btn-primary", type: "button", onclick: () => signIn(user.token) },
              `Sign in as ${user.id}`,
              user.isAdmin ? h("span", { class: "muted-on-primary" }, " (admin)") : null,
            ),
          ),
        ),
        h("p", { class: "helper" }, "Or paste a token below."),
      );
      demo.hidden = false;
    })
    .catch(() => {});
  return null;
}
