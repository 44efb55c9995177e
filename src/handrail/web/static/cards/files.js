// files: a picker limited to the ask's accepted types, the picked files (each removable), and
// Submit once the count is within minFiles..maxFiles. Each file is uploaded with
// POST /files/upload and the answer names the uploads by fileId; a server without uploads
// (404) gets data URLs instead.

import { bytes, h, uid, words } from "../dom.js";
import { ApiError, uploadFile } from "../api.js";
import { button } from "./card.js";

export const ACCEPT = {
  image: { label: "images", types: ["image/jpeg", "image/png", "image/gif", "image/webp"], extensions: [".jpg", ".jpeg", ".png", ".gif", ".webp"] },
  pdf: { label: "PDF", types: ["application/pdf"], extensions: [".pdf"] },
  text: { label: "text", types: ["text/plain"], extensions: [".txt", ".text", ".md", ".log"] },
  csv: { label: "CSV", types: ["text/csv"], extensions: [".csv"] },
  json: { label: "JSON", types: ["application/json"], extensions: [".json"] },
};

const BY_EXTENSION = {
  ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".gif": "image/gif",
  ".webp": "image/webp", ".pdf": "application/pdf", ".txt": "text/plain", ".text": "text/plain",
  ".md": "text/plain", ".log": "text/plain", ".csv": "text/csv", ".json": "application/json",
};

function allowedTypes(accept) {
  return (accept || []).flatMap((a) => (ACCEPT[a] ? ACCEPT[a].types : []));
}

/** A picked file's type: the browser's, unless it is generic or not one the ask accepts and
 * the extension names an accepted one. Parameters such as charset are dropped. */
export function fileType(file, allowed) {
  const reported = (file.type || "").split(";")[0].trim().toLowerCase();
  if (reported && allowed.includes(reported)) return reported;
  const dot = file.name.lastIndexOf(".");
  const fromName = dot >= 0 ? BY_EXTENSION[file.name.slice(dot).toLowerCase()] : undefined;
  if (fromName && (allowed.includes(fromName) || !reported || reported === "application/octet-stream")) {
    return fromName;
  }
  return reported || fromName || "application/octet-stream";
}

function dataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export const files = {
  name: "files",
  label: () => "Files",
  title: (ask) => ask.input.title || "Upload files",
  prompt: (ask) => ask.input.prompt,
  controls(ask, card) {
    const input = ask.input;
    const min = Number.isInteger(input.minFiles) ? input.minFiles : 1;
    const max = Number.isInteger(input.maxFiles) ? input.maxFiles : 10;
    const allowed = allowedTypes(input.accept);
    const acceptAttr = (input.accept || [])
      .flatMap((a) => (ACCEPT[a] ? [...ACCEPT[a].types, ...ACCEPT[a].extensions] : []))
      .join(",");
    const kinds = words((input.accept || []).map((a) => (ACCEPT[a] ? ACCEPT[a].label : a)), "or");
    const picked = [];
    // Checked before anything is uploaded: each file's type and size, and the count.
    const limit = card.ctx && Number.isInteger(card.ctx.maxUploadBytes) ? card.ctx.maxUploadBytes : null;
    let leftOut = [];
    const pickerId = uid("files");
    const status = h("p", { class: "choice-status", id: uid("status"), "aria-live": "polite" });
    const picker = h("input", {
      type: "file",
      id: pickerId,
      class: "file-input",
      accept: acceptAttr,
      multiple: max > 1,
      "aria-describedby": status.id,
      onchange: () => {
        if (max === 1 && picker.files.length) picked.length = 0;
        leftOut = [];
        for (const file of picker.files) {
          if (picked.length < max) picked.push(file);
          else leftOut.push(file.name);
        }
        picker.value = "";
        renderList();
      },
    });
    const list = h("ul", { class: "file-list", "aria-label": "Picked files" });
    const submit = button(input.submitLabel || "Submit", { variant: "primary", type: "submit", "aria-describedby": status.id });
    const listError = card.errorSlot("content.files", picker);

    /** What is wrong with a picked file, before it is sent, or null. */
    function problemOf(file) {
      const type = fileType(file, allowed);
      if (allowed.length && !allowed.includes(type)) return `${file.name} is not ${kinds}: pick another file.`;
      if (limit !== null && file.size > limit) {
        return `${file.name} is ${bytes(file.size)}, more than the limit of ${bytes(limit)}: pick a smaller file.`;
      }
      return null;
    }

    function renderList() {
      let bad = 0;
      list.replaceChildren(
        ...picked.map((file, index) => {
          const type = fileType(file, allowed);
          const error = card.errorSlot(`content.files[${index}]`);
          const problem = problemOf(file);
          if (problem) {
            bad += 1;
            error.textContent = problem;
            error.hidden = false;
          }
          return h(
            "li",
            { class: "file-item" },
            h("span", { class: "file-name" }, file.name),
            h("span", { class: "file-meta" }, `${type}, ${bytes(file.size)}`),
            button("Remove", {
              variant: "ghost",
              "aria-label": `Remove ${file.name}`,
              onClick: () => {
                picked.splice(index, 1);
                leftOut = [];
                renderList();
                picker.focus();
              },
            }),
            error,
          );
        }),
      );
      const count = picked.length;
      const ok = count >= min && count <= max && bad === 0;
      const range = min === max ? `${min}` : `${min} to ${max}`;
      const size = limit !== null ? `, each at most ${bytes(limit)}` : "";
      let text = `Pick ${range} file${max === 1 ? "" : "s"} (${kinds}${size}). ${count} picked.`;
      if (leftOut.length) {
        text += ` At most ${max} can be sent, so ${words(leftOut.map((n) => `“${n}”`), "and")} ${leftOut.length === 1 ? "was" : "were"} not added.`;
      }
      status.textContent = text;
      submit.dataset.locked = ok ? "false" : "true";
      submit.disabled = !ok || card.busy;
    }

    async function answer() {
      const refs = [];
      for (const [index, file] of picked.entries()) {
        const mimeType = fileType(file, allowed);
        status.textContent = `Uploading ${index + 1} of ${picked.length}: ${file.name}…`;
        const typed = new File([file], file.name, { type: mimeType });
        try {
          const uploaded = await uploadFile(typed);
          refs.push({ fileId: uploaded.id, filename: uploaded.filename, mimeType: uploaded.mimeType, size: uploaded.size });
        } catch (error) {
          if (error instanceof ApiError && (error.status === 404 || error.status === 405)) {
            refs.push({ url: await dataUrl(typed), filename: file.name, mimeType, size: file.size });
            continue;
          }
          renderList();
          const failure = new Error(error.message);
          failure.fields = [{ path: `content.files[${index}]`, message: `${file.name}: ${error.message}` }];
          throw failure;
        }
      }
      renderList();
      return { action: "accept", content: { files: refs } };
    }

    renderList();
    return card.form(
      [
        h(
          "div",
          { class: "field" },
          h("label", { for: pickerId, class: "field-label" }, max === 1 ? "Choose a file" : "Choose files"),
          picker,
          status,
          list,
          listError,
        ),
        card.actions(submit, input.allowDecline !== false ? card.skipButton() : null),
      ],
      () => card.submit(answer),
    );
  },
  summary(ask, response) {
    const sent = (response && response.content && response.content.files) || [];
    return h(
      "div",
      {},
      h("p", { class: "summary-line" }, `Sent ${sent.length} file${sent.length === 1 ? "" : "s"}`),
      h(
        "ul",
        { class: "plain" },
        sent.map((f) => h("li", {}, h("span", { class: "file-name" }, f.filename), ` (${f.mimeType}, ${bytes(f.size)})`)),
      ),
    );
  },
};
