// One card per ask: picks the renderer from the ask's origin and kind, as the wire JSON says.

import { AskCard } from "./card.js";
import { choice, permission, selection } from "./choice.js";
import { clarify } from "./clarify.js";
import { approval, confirm, confirmation } from "./confirm.js";
import { elicitation } from "./elicitation.js";
import { files } from "./files.js";
import { form } from "./form.js";
import { markdown } from "./markdown.js";
import { pageApproval, pageTool } from "./page.js";
import { unknown } from "./simple.js";

const BY_KIND = { choice, confirm, markdown, form, files, clarify };
const BY_ORIGIN = { approval, permission, selection, confirmation, "page-tool": pageTool };

export function rendererFor(ask) {
  // An approval of a website's tool: "Allow this call only", the wider answers behind an arrow.
  if (ask.origin === "approval" && String(ask.connectionId || "").startsWith("page:")) return pageApproval;
  // An MCP server's request for input: a form, a confirm, or a URL to open (shown, never fetched).
  if (ask.origin === "elicitation") return elicitation(ask);
  return BY_ORIGIN[ask.origin] || BY_KIND[ask.kind] || unknown;
}

/** A card for `ask` ({toolCallId, kind, input, origin?, toolName?, simple?, preview?,
 * expiresAt?, status, response?}). */
export function createCard(ask, ctx) {
  return new AskCard(ask, ctx, rendererFor(ask));
}

export { AskCard };
