/**
 * Request bodies: JSON only, at most 20 MiB, counted while streaming so an oversized upload is
 * refused at the byte that crosses the limit instead of after buffering all of it.
 */
import { ServiceError } from "../errors";

export const maxBodyBytes = 20 * 1024 * 1024;

const tooLarge = () => new ServiceError("too_large", `Request body exceeds ${maxBodyBytes} bytes`);

async function readLimited(request: Request): Promise<string> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > maxBodyBytes) throw tooLarge();
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBodyBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Elysia's parse hook: undefined for an empty body, a parsed value for JSON, 400 otherwise. */
export async function parseJsonBody(request: Request, contentType: string): Promise<unknown> {
  const text = await readLimited(request);
  if (text.length === 0) return undefined;
  const mediaType = contentType.split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "application/json") throw new ServiceError("malformed", "Content-Type must be application/json");
  try {
    return JSON.parse(text);
  } catch {
    throw new ServiceError("malformed", "Malformed JSON body");
  }
}
