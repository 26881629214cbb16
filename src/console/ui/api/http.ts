/** One HTTP call to the API, and its failures in words a person can act on. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The API's own `{error}` is already plain words for 4xx; the rest gets a sentence here. */
function describeFailure(status: number, error: string | undefined): string {
  if (status === 413) return "That is too large: the server takes at most 20 MB per request.";
  if (status >= 500) return `The server had a problem (HTTP ${status}). Try again in a moment.`;
  if (error) return error;
  if (status === 403) return "You do not have access to this.";
  return `The request failed (HTTP ${status}).`;
}

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

export async function request<T>(method: Method, path: string, options: { body?: unknown; credential?: string } = {}): Promise<T> {
  const headers: Record<string, string> = {};
  if (options.credential) headers.authorization = `Bearer ${options.credential}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  } catch {
    throw new ApiError(0, "Cannot reach inboxd. Check that the server is running and that you are online.");
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) throw new ApiError(response.status, describeFailure(response.status, (parsed as { error?: string } | undefined)?.error));
  // JSON for resources; text as it is for the rest (a message's raw source).
  return (response.headers.get("content-type")?.includes("json") ? parsed : text) as T;
}

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
