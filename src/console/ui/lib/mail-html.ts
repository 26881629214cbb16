/**
 * Untrusted message HTML, made into the `srcdoc` of a sandboxed iframe. The sandbox (no
 * `allow-scripts`, no `allow-same-origin`) stops scripts. Remote loads meet two layers. First this
 * allowlist: nothing but images may name a remote URL, and those only once the reader allows
 * them, because a policy is not enough alone: Chromium opens a connection for `<iframe src>` that
 * its policy then blocks (test/console/remote-content.test.ts counts TCP connections), and a
 * `<meta>` policy races the preload scanner. Then the frame's Content-Security-Policy
 * (`framePolicy`, both as a `<meta>` and as the iframe's `csp` attribute) under the console
 * page's own, which a `srcdoc` document inherits.
 *
 * Hand-written rather than DOMPurify: what DOMPurify adds is script-safety, which the sandbox
 * already gives, and it has no notion of remote loads, so the URL and CSS rules below would be
 * needed on top of its 12 KB (3.4, minified and gzipped): +56% on the console's 21 KB first
 * visit. DOMParser and a constructed style sheet run and load nothing, and read HTML and CSS
 * (escapes included) exactly as the frame will.
 */
import { dataUrl } from "./files";
import type { Attachment } from "../api/types";

/** The message frame's policy: nothing but inline styles and `data:` images, and remote images only once allowed. */
export const framePolicy = (remoteImages: boolean) =>
  ["default-src 'none'", "style-src 'unsafe-inline'", `img-src data:${remoteImages ? " https: http:" : ""}`, "font-src data:", "form-action 'none'", "base-uri 'none'"].join("; ");

/** Removed with their content: they run, embed, fetch, navigate (meta refresh), or parse in ways a re-parse may not repeat (svg, math, noscript). */
const droppedElements = new Set(
  "script noscript template iframe frame frameset object embed applet param portal fencedframe link meta base video audio source track canvas svg math".split(" "),
);

/** What mail is made of. Any other element is unwrapped: its content stays, its attributes (and whatever they load) go. */
const keptElements = new Set(
  (
    "html head body title style a abbr address article aside b bdi bdo big blockquote br caption center cite code col colgroup dd del details dfn div dl dt em " +
    "figcaption figure font footer h1 h2 h3 h4 h5 h6 header hgroup hr i img ins kbd label li main mark nav ol p picture pre q rp rt ruby s samp section small " +
    "span strike strong sub summary sup table tbody td tfoot th thead time tr tt u ul var wbr button input select option optgroup textarea fieldset legend"
  ).split(" "),
);

/** Attributes that style or describe and load nothing. `href`, `src`, `srcset`, `background` and `style` are judged one by one below. */
const keptAttributes = new Set(
  (
    "abbr align alt axis bgcolor border cellpadding cellspacing char charoff checked class clear color cols colspan compact datetime dir disabled face " +
    "frame headers height hspace id label lang link maxlength multiple name noshade nowrap open placeholder readonly rel reversed role rows rowspan rules " +
    "scope selected size span start summary text title type valign value vlink alink vspace width"
  ).split(" "),
);

const remoteUrl = /^\s*(https?:)?\/\//i;
const imageDataUrl = /^\s*data:image\//i;
const safeLink = /^\s*(https?:|mailto:|tel:|#)/i;

type UrlKind = "data" | "remote" | "other";
const kindOf = (url: string): UrlKind => (imageDataUrl.test(url) ? "data" : remoteUrl.test(url) ? "remote" : "other");

/** The URLs of a `srcset`: the first word of each comma-separated candidate. */
const srcsetUrls = (srcset: string) => srcset.split(",").map((candidate) => candidate.trim().split(/\s+/)[0] ?? "");

export interface PreparedHtml {
  /** The sanitized document in two parts; `srcdoc` puts its policy first. */
  head: string;
  body: string;
  /** Images and backgrounds fetched from elsewhere: blocked, or shown when allowed. */
  remoteImages: number;
  remoteImagesShown: boolean;
}

/** What style attributes and every kind of rule with declarations (`@page` has its own type) have in common. */
type Declarations = Pick<CSSStyleDeclaration, "length" | "item" | "getPropertyValue" | "removeProperty" | "cssText">;

class Sanitizer {
  remoteImages = 0;

  constructor(
    private readonly allowRemoteImages: boolean,
    private readonly inlineImages: Map<string, string>,
  ) {}

  /** An image URL as it may stay, or undefined to drop it: `cid:` becomes the attachment's data, remote ones wait for the reader. */
  private image(url: string): string | undefined {
    if (/^cid:/i.test(url)) return this.inlineImages.get(url.slice(4));
    const kind = kindOf(url);
    if (kind === "remote") this.remoteImages++;
    return kind === "data" || (kind === "remote" && this.allowRemoteImages) ? url : undefined;
  }

  private imageAttribute(element: Element, name: string, value: string) {
    const kept = name === "srcset" ? (srcsetUrls(value).every((url) => this.image(url) !== undefined) ? value : undefined) : this.image(value);
    if (kept === undefined) element.removeAttribute(name);
    else element.setAttribute(name, kept);
  }

  /**
   * The declarations of one rule or style attribute, as the browser parsed them (escapes read).
   * A declaration naming any URL but an allowed image goes, and so does anything that could
   * bring a URL back in unparsed: custom properties, `var()`, `image-set()` strings.
   */
  style(style: Declarations, imagesAllowed = true) {
    for (const property of Array.from({ length: style.length }, (_, index) => style.item(index))) {
      const value = style.getPropertyValue(property);
      const urls = [...value.matchAll(/url\(\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^)\s]*))/gi)].map((match) => (match[1] ?? match[2] ?? match[3] ?? "").replace(/\\(.)/g, "$1"));
      const opaque = property.startsWith("--") || /var\(|image-set\(|image\(|src\(|cross-fade\(|element\(/i.test(value);
      const allowed = urls.every((url) => {
        const kind = kindOf(url);
        if (kind === "remote" && imagesAllowed) this.remoteImages++;
        return kind === "data" || (kind === "remote" && imagesAllowed && this.allowRemoteImages);
      });
      if (opaque || !allowed) style.removeProperty(property);
    }
    // A shorthand pending `var()` substitution has no longhand values to judge: the whole text is checked once more.
    if (/var\(/i.test(style.cssText)) style.cssText = "";
  }

  /** A `<style>` block through the browser's CSS parser: constructed sheets keep no `@import`; rules that are neither declarations nor groups of them go. */
  styleSheet(css: string): string {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(css);
    this.rules(sheet);
    // `</style>` inside a string would end the element when the frame parses it.
    return [...sheet.cssRules].map((rule) => rule.cssText).join("\n").replaceAll("</", "<\\/");
  }

  private rules(parent: CSSStyleSheet | CSSGroupingRule | CSSKeyframesRule | CSSStyleRule) {
    for (let index = parent.cssRules.length - 1; index >= 0; index--) {
      const rule = parent.cssRules[index]!;
      // CSS nesting: a style rule holds rules of its own, and declarations after them
      // (CSSNestedDeclarations, which no type names yet): both are checked as their parent is.
      const nestedDeclarations = !(rule instanceof CSSStyleRule) && "style" in rule && rule.style instanceof CSSStyleDeclaration;
      const styled = rule instanceof CSSStyleRule || rule instanceof CSSPageRule || rule instanceof CSSKeyframeRule || rule instanceof CSSFontFaceRule || nestedDeclarations;
      const grouping = rule instanceof CSSGroupingRule || rule instanceof CSSKeyframesRule || (rule instanceof CSSStyleRule && rule.cssRules.length > 0);
      // Fonts never come from elsewhere, images or not.
      if (styled) this.style((rule as CSSRule & { style: CSSStyleDeclaration }).style, !(rule instanceof CSSFontFaceRule));
      if (grouping) this.rules(rule);
      // A keyframes rule holds only keyframes, which are styled.
      if (!styled && !grouping && !(parent instanceof CSSKeyframesRule)) parent.deleteRule(index);
    }
  }

  element(element: Element) {
    for (const { name: rawName, value } of [...element.attributes]) {
      const name = rawName.toLowerCase();
      const tag = element.localName;
      if (name === "style") {
        this.style((element as HTMLElement).style);
        if (!(element as HTMLElement).style.length) element.removeAttribute(rawName);
      } else if ((name === "src" || name === "srcset") && tag === "img") this.imageAttribute(element, name, value);
      else if (name === "background" && ["body", "table", "td", "th", "tr"].includes(tag)) this.imageAttribute(element, name, value);
      else if (name === "href" && tag === "a") {
        if (!safeLink.test(value)) element.removeAttribute(rawName);
      } else if (!keptAttributes.has(name)) element.removeAttribute(rawName);
    }
    if (element.localName === "a") {
      element.setAttribute("target", "_blank");
      element.setAttribute("rel", "noopener noreferrer");
    }
  }
}

export function prepareMailHtml(html: string, attachments: Attachment[], allowRemoteImages: boolean): PreparedHtml {
  const doc = new DOMParser().parseFromString(html, "text/html");
  const inline = new Map(attachments.filter((a) => a.contentId).map((a) => [a.contentId!.replace(/^<|>$/g, ""), dataUrl(a.content, a.contentType)]));
  const sanitizer = new Sanitizer(allowRemoteImages, inline);
  // Children before parents (the list is in document order, walked backwards), so an unwrapped element's content is already clean.
  const elements = [...doc.querySelectorAll("*")];
  for (let index = elements.length - 1; index >= 0; index--) {
    const element = elements[index]!;
    if (droppedElements.has(element.localName) || element.namespaceURI !== "http://www.w3.org/1999/xhtml") element.remove();
    else if (!keptElements.has(element.localName)) element.replaceWith(...element.childNodes);
    else if (element.localName === "style") element.textContent = sanitizer.styleSheet(element.textContent ?? "");
    else sanitizer.element(element);
  }
  // Only styles and the title belong in the head; DOMParser puts whatever else came first there.
  for (const element of [...doc.head.children]) if (element.localName !== "style" && element.localName !== "title") element.remove();
  return { head: doc.head.innerHTML, body: doc.body.outerHTML, remoteImages: sanitizer.remoteImages, remoteImagesShown: allowRemoteImages };
}

/** Before the message's own styles, which override it: readable type for mail that brings none. */
const defaultStyle = "body{margin:0.75rem;font:15px/1.5 system-ui,sans-serif;color:#1b2330;overflow-wrap:anywhere}img{max-width:100%;height:auto}";

const escapeAttribute = (value: string) => value.replaceAll("&", "&amp;").replaceAll('"', "&quot;");

export function srcdoc(prepared: PreparedHtml): string {
  const policyMeta = `<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(framePolicy(prepared.remoteImagesShown))}">`;
  const ours = `<meta charset="utf-8">${policyMeta}<meta name="referrer" content="no-referrer"><style>${defaultStyle}</style>`;
  return `<!doctype html><html><head>${ours}${prepared.head}</head>${prepared.body}</html>`;
}
