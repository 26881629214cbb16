/** Attachments travel base64-encoded both ways. */

/**
 * An attachment to save, always typed application/octet-stream whatever it claims: a `blob:` URL
 * has the console's origin, so an HTML or SVG file opened from it (say, in a new tab) would run
 * there with the reader's session. As octet-stream the browser can only save it.
 */
export function downloadBlob(content: string): Blob {
  const bytes = Uint8Array.from(atob(content), (char) => char.charCodeAt(0));
  return new Blob([bytes], { type: "application/octet-stream" });
}

/** Raster images shown inline, as `data:` URLs in an `<img>`; SVG is not one of them (it can hold script). */
export const previewableImages = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]);

/**
 * A PDF for the browser's own viewer, in a sandboxed frame: typed application/pdf, which the
 * browser only ever renders as a document, never runs at the console's origin.
 */
export function pdfBlob(content: string): Blob {
  return new Blob([Uint8Array.from(atob(content), (char) => char.charCodeAt(0))], { type: "application/pdf" });
}

export async function fileToBase64(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  return btoa(binary);
}

export const dataUrl = (content: string, contentType = "application/octet-stream") => `data:${contentType};base64,${content}`;
