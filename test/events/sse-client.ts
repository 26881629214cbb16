/**
 * A Server-Sent Events client for tests: a real HTTP request read as it streams, parsed as WHATWG
 * HTML §9.2.6 says (fields, comments, blank line ends an event). `close()` drops the connection.
 */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: Headers;
  /** Every event so far, in order. */
  events: SseEvent[];
  /** Comment lines (without the colon) and `retry:` values, in order. */
  comments: string[];
  retries: number[];
  /** As a browser keeps it: the last `id:` field, with or without data. */
  readonly lastEventId: string | undefined;
  /** Resolves with the first `count` events once they came; rejects after `timeoutMs`. */
  waitForEvents(count: number, timeoutMs?: number): Promise<SseEvent[]>;
  waitForComment(text: string, timeoutMs?: number): Promise<void>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
  /** The body when the answer was not a stream (an error). */
  errorBody?: unknown;
}

export async function openStream(baseUrl: string, path: string, apiKey: string | undefined, headers: Record<string, string> = {}): Promise<SseStream> {
  const abort = new AbortController();
  const response = await fetch(baseUrl + path, { headers: { ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}), accept: "text/event-stream", ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const retries: number[] = [];
  let lastEventId: string | undefined;
  let changed = () => {};
  const nextChange = () => new Promise<void>((resolve) => (changed = resolve));
  if (!response.headers.get("content-type")?.startsWith("text/event-stream")) {
    const text = await response.text();
    let errorBody: unknown = text;
    try {
      errorBody = JSON.parse(text);
    } catch {}
    return { status: response.status, headers: response.headers, events, comments, retries, lastEventId, errorBody, ended: Promise.resolve(), close: () => {}, waitForEvents: () => Promise.reject(new Error("not a stream")), waitForComment: () => Promise.reject(new Error("not a stream")) };
  }
  const read = async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    let current: Partial<SseEvent> & { data?: string } = {};
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        const lines = buffer.split(/\r\n|\r|\n/);
        buffer = lines.pop()!;
        for (const line of lines) {
          if (line === "") {
            if (current.data !== undefined) events.push({ id: current.id, event: current.event ?? "message", data: current.data });
            current = {};
          } else if (line.startsWith(":")) comments.push(line.slice(1).trim());
          else {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "data") current.data = current.data === undefined ? value : `${current.data}\n${value}`;
            else if (field === "id") current.id = lastEventId = value;
            else if (field === "event") current.event = value;
            else if (field === "retry") retries.push(Number(value));
          }
        }
        changed();
      }
    } catch {
      // Aborted by close().
    }
    changed();
  };
  const ended = read();
  const waitUntil = async (done: () => boolean, what: () => string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    let finished = false;
    void ended.then(() => (finished = true));
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0 || finished) throw new Error(`${what()} (${finished ? "the stream ended" : `after ${timeoutMs} ms`})`);
      await Promise.race([nextChange(), Bun.sleep(Math.min(left, 50))]);
    }
  };
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    retries,
    get lastEventId() {
      return lastEventId;
    },
    ended,
    close: () => abort.abort(),
    async waitForEvents(count, timeoutMs = 5000) {
      await waitUntil(() => events.length >= count, () => `${events.length} of ${count} events: ${JSON.stringify(events.map((e) => e.event))}`, timeoutMs);
      return events.slice(0, count);
    },
    async waitForComment(text, timeoutMs = 5000) {
      await waitUntil(() => comments.includes(text), () => `no comment '${text}'`, timeoutMs);
    },
  };
}
