/**
 * Untrusted message HTML, made into the `srcdoc` of a sandboxed iframe. The sandbox (no
 * `allow-scripts`, no `allow-same-origin`) is what stops scripts. Remote images are taken out of
 * the markup until the reader allows them (a policy alone races the browser's preload scanner),
 * and the document's own Content-Security-Policy stops every other load but inline styles and
 * `data:` images. Parsing with DOMParser runs and loads nothing; it lets us drop what a policy
 * cannot govern (refresh, prefetch hints), point links at new tabs and show inline (`cid:`)
 * images from the message's own attachments.
 */
import { dataUrl } from "./files";
import type { Attachment } from "../api/types";

const policy = (remoteImages: boolean) =>
  ["default-src 'none'", "style-src 'unsafe-inline'", `img-src data:${remoteImages ? " https: http:" : ""}`, "font-src data:"].join("; ");

// <meta http-equiv=refresh> navigates and <link rel=dns-prefetch> resolves outside of CSP; <base> would redirect every link.
const droppedElements = "script, noscript, meta, link, base";
const remoteUrl = /^\s*(https?:)?\/\//i;
const remoteCssUrl = /url\(\s*(['"]?)\s*(https?:)?\/\/[^)]*\)/gi;
// Remote style sheets load no matter what the reader allows: they track and restyle.
const cssImport = /@import[^;]*;?/gi;

/** Attributes that fetch an image; other remote loads (frames, media) stay blocked whatever the reader allows. */
const loadsImage = (element: Element, name: string) =>
  name === "background" || name === "poster" || name === "srcset" || (name === "src" && (element.localName === "img" || element.localName === "input"));

const isRemote = (name: string, value: string) => (name === "srcset" ? /(https?:)?\/\//i.test(value) : remoteUrl.test(value));

export interface PreparedHtml {
  /** The sanitized document in two parts; `srcdoc` puts its policy first. */
  head: string;
  body: string;
  /** Images and backgrounds fetched from elsewhere: blocked, or shown when allowed. */
  remoteImages: number;
  remoteImagesShown: boolean;
}

/** Counts the remote `url()`s of a style and, unless they are allowed, replaces each with `none`. */
function treatStyle(css: string, allowRemote: boolean): { css: string; remote: number } {
  const withoutImports = css.replace(cssImport, "");
  const remote = withoutImports.match(remoteCssUrl)?.length ?? 0;
  return { css: allowRemote ? withoutImports : withoutImports.replace(remoteCssUrl, "none"), remote };
}

export function prepareMailHtml(html: string, attachments: Attachment[], allowRemoteImages: boolean): PreparedHtml {
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const element of doc.querySelectorAll(droppedElements)) element.remove();
  const inline = new Map(attachments.filter((a) => a.contentId).map((a) => [a.contentId!.replace(/^<|>$/g, ""), dataUrl(a.content, a.contentType)]));
  let remoteImages = 0;
  for (const element of doc.querySelectorAll("*")) {
    for (const { name: rawName, value } of [...element.attributes]) {
      const name = rawName.toLowerCase();
      // Handlers cannot run in the sandbox; dropping them keeps the document honest besides.
      if (name.startsWith("on")) element.removeAttribute(rawName);
      else if (name === "src" && value.startsWith("cid:")) element.setAttribute(rawName, inline.get(value.slice(4)) ?? "");
      else if (loadsImage(element, name) && isRemote(name, value)) {
        remoteImages++;
        if (!allowRemoteImages) element.removeAttribute(rawName);
      } else if (name === "style") {
        const style = treatStyle(value, allowRemoteImages);
        remoteImages += style.remote;
        element.setAttribute(rawName, style.css);
      }
    }
    if (element.localName === "a") {
      element.setAttribute("target", "_blank");
      element.setAttribute("rel", "noopener noreferrer");
    }
  }
  for (const element of doc.querySelectorAll("style")) {
    const style = treatStyle(element.textContent ?? "", allowRemoteImages);
    remoteImages += style.remote;
    element.textContent = style.css;
  }
  return { head: doc.head.innerHTML, body: doc.body.outerHTML, remoteImages, remoteImagesShown: allowRemoteImages };
}

/** Before the message's own styles, which override it: readable type for mail that brings none. */
const defaultStyle = "body{margin:0.75rem;font:15px/1.5 system-ui,sans-serif;color:#1b2330;overflow-wrap:anywhere}img{max-width:100%;height:auto}";

const escapeAttribute = (value: string) => value.replaceAll("&", "&amp;").replaceAll('"', "&quot;");

export function srcdoc(prepared: PreparedHtml): string {
  const policyMeta = `<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(policy(prepared.remoteImagesShown))}">`;
  const ours = `<meta charset="utf-8">${policyMeta}<meta name="referrer" content="no-referrer"><style>${defaultStyle}</style>`;
  return `<!doctype html><html><head>${ours}${prepared.head}</head>${prepared.body}</html>`;
}
