/** Attachments travel base64-encoded both ways. */

export function base64ToBlob(content: string, contentType = "application/octet-stream"): Blob {
  const bytes = Uint8Array.from(atob(content), (char) => char.charCodeAt(0));
  return new Blob([bytes], { type: contentType });
}

export async function fileToBase64(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  return btoa(binary);
}

export const dataUrl = (content: string, contentType = "application/octet-stream") => `data:${contentType};base64,${content}`;
