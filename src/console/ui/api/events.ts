/**
 * The organization's live events for the views that show mail: one `GET /v1/events` stream per
 * tab, shared by every view that listens and open while one does. After a drop it reconnects
 * with the last event id, so nothing is missed; while it is down, views poll as before.
 */
import { openEventStream } from "./session";

/** What a view needs to tell whether an event concerns it. */
export interface LiveEvent {
  event: string;
  inboxId?: string;
  messageId?: string;
  threadId?: string;
}

export interface LiveListener {
  /** An event arrived. */
  onEvent(event: LiveEvent): void;
  /** What is shown may be stale: the stream's first connection, or its `reset` (events were lost to the retention period). */
  onStale(): void;
}

/** A view leaving and the next arriving share the stream: it closes only when none listens for this long. */
const closeDelayMs = 5000;
const maxRetryMs = 30_000;

const listeners = new Set<LiveListener>();
let connection: AbortController | undefined;
let closeTimer: ReturnType<typeof setTimeout> | undefined;
let connected = false;
/** Where a new connection resumes: the server sends its position first, then each event's id. */
let lastEventId: string | undefined;

/** Whether events arrive now; views poll while they do not. */
export const isLive = () => connected;

export function listen(listener: LiveListener): () => void {
  listeners.add(listener);
  clearTimeout(closeTimer);
  if (!connection) {
    connection = new AbortController();
    void run(connection.signal);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size > 0) return;
    closeTimer = setTimeout(() => {
      connection?.abort();
      connection = undefined;
    }, closeDelayMs);
  };
}

const stale = () => {
  for (const listener of [...listeners]) listener.onStale();
};

async function run(signal: AbortSignal) {
  let failures = 0;
  while (!signal.aborted) {
    try {
      const resuming = lastEventId !== undefined;
      const body = await openEventStream(lastEventId, signal);
      failures = 0;
      connected = true;
      // A first connection starts at the newest event: one committed while the views loaded may be before it.
      if (!resuming) stale();
      await readEvents(body, signal);
    } catch {
      // A refusal (too many streams), a drop, or the tab leaving: polling covers it meanwhile.
    }
    connected = false;
    if (signal.aborted) return;
    failures++;
    await new Promise((resolve) => setTimeout(resolve, Math.min(maxRetryMs, 1000 * 2 ** failures)));
  }
}

/** The event stream format (WHATWG HTML §9.2.6): `field: value` lines, a blank line ends an event, `:` starts a comment. */
async function readEvents(body: ReadableStream<Uint8Array>, signal: AbortSignal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined));
  let buffer = "";
  let name = "message";
  let data: string | undefined;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop()!;
    for (const line of lines) {
      if (line === "") {
        if (data !== undefined) dispatch(name, data);
        name = "message";
        data = undefined;
        continue;
      }
      const colon = line.indexOf(":");
      if (colon === 0) continue;
      const field = colon < 0 ? line : line.slice(0, colon);
      const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      // An `id:` alone (no data) still moves the resume position: the server starts with one.
      if (field === "id") lastEventId = text;
      else if (field === "event") name = text;
      else if (field === "data") data = data === undefined ? text : `${data}\n${text}`;
    }
  }
}

function dispatch(name: string, data: string) {
  if (name === "reset") return stale();
  let body: { inboxId?: string; messageId?: string; data?: { threadId?: unknown } };
  try {
    body = JSON.parse(data);
  } catch {
    return;
  }
  const threadId = typeof body.data?.threadId === "string" ? body.data.threadId : undefined;
  const event: LiveEvent = { event: name, inboxId: body.inboxId, messageId: body.messageId, threadId };
  for (const listener of [...listeners]) listener.onEvent(event);
}
