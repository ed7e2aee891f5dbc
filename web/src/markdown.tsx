/**
 * Assistant text as markdown: `marked` (GitHub-flavoured: tables, lists, fenced code) turns it into HTML, with any
 * raw HTML in the text escaped (shown as text), and DOMPurify keeps only harmless markup before it reaches the page.
 * Model output is untrusted: no script, event handler, style, form or embedded content survives, links keep only http(s)/mailto targets and open in a new tab
 * without access to this page (rel=noopener noreferrer). Images are shown as links (the console's CSP loads no
 * image from elsewhere, and a broken one would only log errors). Each code block gets a copy button.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { useLayoutEffect, useMemo, useRef } from "preact/hooks";

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // HTML the model wrote is shown as text: it is never parsed, so none of it can run or even be looked at by the
    // browser (Chrome reports CSP violations for handlers in a parsed but inert document)
    html({ text }) {
      return escapeHtml(text);
    },
    image({ href, text }) {
      return `<a href="${escapeAttr(href)}">${escapeHtml(text || href)}</a>`;
    },
  },
});

const purify = DOMPurify();
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const SANITIZE = {
  FORBID_TAGS: [
    "style",
    "img",
    "svg",
    "math",
    "form",
    "input",
    "button",
    "textarea",
    "select",
    "iframe",
    "video",
    "audio",
    "source",
    "picture",
  ],
  FORBID_ATTR: ["style", "class", "id"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  ADD_ATTR: ["target"],
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
const escapeAttr = escapeHtml;

/** Markdown → sanitized HTML (a string the caller may put into the page). */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return purify.sanitize(html, SANITIZE);
}

export function Markdown(props: { text: string; class?: string; testid?: string }) {
  const html = useMemo(() => renderMarkdown(props.text), [props.text]);
  const ref = useRef<HTMLDivElement>(null);
  // a copy button per code block, made here (not in the HTML), so nothing the model wrote can be a button
  useLayoutEffect(() => {
    for (const pre of ref.current?.querySelectorAll("pre") ?? []) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy code");
      button.addEventListener("click", () => void copy(pre.querySelector("code")?.textContent ?? "", button));
      pre.prepend(button);
    }
  }, [html]);
  return (
    <div
      ref={ref}
      class={`md ${props.class ?? ""}`}
      data-testid={props.testid}
      // sanitized above (renderMarkdown)
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}

async function copy(text: string, button: HTMLButtonElement): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => {
    button.textContent = "Copy";
  }, 1500);
}
