/**
 * The live event stream of an organization (GET /v1/events): Server-Sent Events (WHATWG HTML
 * §9.2) carrying the events webhooks get, in the order they were committed, resumable by event id
 * from the events the database keeps. A stream wakes when this process commits events and polls
 * now and then for those another process committed; it reads a page from the store only when its
 * client has taken what came before, so a slow client holds one page, never a growing backlog.
 * A page larger than PAGE_CHARS (an event carrying attachments) is written in pieces as the client
 * reads, and holds one of its organization's few places for large pages until it is all taken.
 */
import { takeTurn } from "../event-loop";
import { organizationOfApiKey } from "../auth/api-keys";
import type { Clock } from "../clock";
import type { Config } from "../config";
import { Counts } from "../counts";
import { invalid, notFound, ServiceError } from "../errors";
import type { Logger } from "../log";
import type { EventRecord } from "../store/records";
import type { Store } from "../store/store";
import { envelopeBody } from "../webhooks/envelope";
import { eventNames, type EventName } from "./names";

/** How often an open stream looks for events committed by another process (or each heartbeat, when shorter); this one's commits wake it at once. */
const POLL_INTERVAL_MS = 5000;
/** A page read from the store: at most this many events, fewer once their payloads pass 1 MiB. */
const PAGE_EVENTS = 100;
const PAGE_CHARS = 1 << 20;
/** A page over PAGE_CHARS holds a place; an organization has this many. */
const LARGE_PAGES_PER_ORGANIZATION = 2;
/** A large event is written in pieces of this many characters, each when the client took the one before. */
const PIECE_CHARS = 64 * 1024;
/** The reconnection time sent first (WHATWG HTML §9.2.6 `retry`): an EventSource waits this long after a disconnect. */
const RECONNECT_MS = 3000;
/** Seconds a client refused for too many streams is told to wait. */
const RETRY_AFTER_SECONDS = 5;

const DAY_MS = 24 * 60 * 60 * 1000;
/** How far ahead of this node's clock an id may be, made on another node: far more than clocks drift (leases assume less). */
const FUTURE_ID_ALLOWANCE_MS = 60 * 60 * 1000;
const eventIdPattern = /^evt_[0-9a-f]{24}$/;
/**
 * The position of a stream that starts before any event it could name (none kept yet, or after
 * a reset): an id below every event's. A client that loses the connection before the first event
 * resumes from it and gets every event kept, where without a position it would start again at
 * the newest and miss those committed while it reconnected.
 */
const beforeEveryEvent = `evt_${"0".repeat(24)}`;

/** When newId made the event id: its first 12 hex digits are milliseconds (src/ids.ts). */
const idTime = (id: string) => parseInt(id.slice(4, 16), 16);

export interface StreamRequest {
  organizationId: string;
  /** The key the guard let in: looked up again at each poll, and the stream ends once it is revoked. */
  apiKey: string;
  /** The stream goes on after this event (Last-Event-ID, or ?since): `field` names where it came from. */
  resumeAfter?: { id: string; field: string };
  /** Event names, comma-separated (`?events=`): only these. */
  types?: string;
  /** Only this inbox's events. */
  inboxId?: string;
}

interface StreamStart {
  organizationId: string;
  afterId: string | null;
  /** Why the client's position is unknown (a `reset` begins the stream), or undefined. */
  reset?: string;
  types?: EventName[];
  inboxId?: string;
  stillAuthorized: () => Promise<boolean>;
  /** With an inbox filter: whether that inbox still exists (a look-up that fails says it does). */
  inboxStillThere?: () => Promise<boolean>;
}

function parseTypes(raw: string): EventName[] {
  const names = raw
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.find((name) => !(eventNames as readonly string[]).includes(name));
  if (unknown !== undefined || names.length === 0) throw invalid(`events: ${unknown === undefined ? "name at least one event" : `unknown event name '${unknown}'`} (known: ${eventNames.join(", ")})`);
  return names as EventName[];
}

type EventStreamSettings = Pick<Config, "eventRetentionDays" | "eventStreamsPerOrg" | "eventHeartbeatMs">;

/** The open streams of an App: opened by the route, woken on commits, closed at shutdown. */
export class EventStreams {
  private readonly open = new Map<string, Set<EventStream>>();
  /**
   * Places for large pages each organization's streams hold (granted or sending). Ten paused
   * clients of one organization, each sent an event with a 17 MiB attachment, held 420 MB (each
   * socket keeps what its client has not read); with places, the others wait until a holder's
   * client has read its page.
   */
  private readonly largePages = new Counts();
  /**
   * Streams waiting for a place, longest first. A place given back passes to the first, held for
   * it: woken, it reads its page again (every waiting stream reading its large page again would
   * cost what the places save), and a stream that comes later waits behind it.
   */
  private readonly awaitingPlace = new Map<string, EventStream[]>();
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly settings: EventStreamSettings,
  ) {}

  /** Events were committed: every open stream reads what is new to it. */
  wake(): void {
    for (const streams of this.open.values()) for (const stream of streams) stream.wake();
  }

  /**
   * One of the organization's keys was revoked: each of its streams looks its own key up again at
   * once, and the revoked key's end. A revoked key's stream went on for a poll interval, showing
   * new mail to whoever held the key; streams on other nodes still see it at their next poll.
   */
  keyRevoked(organizationId: string): void {
    for (const stream of this.open.get(organizationId) ?? []) stream.checkKeyNow();
  }

  /** How many streams the organization holds open. */
  count(organizationId: string): number {
    return this.open.get(organizationId)?.size ?? 0;
  }

  /**
   * The body of a new stream. 429 when the organization holds its limit of streams open, 503 once
   * the server is stopping, 422 for a malformed resume id or event name, 404 for another
   * organization's inbox.
   */
  async start(request: StreamRequest): Promise<ReadableStream<Uint8Array>> {
    if (this.closed) throw new ServiceError("unavailable", "The server is stopping: reconnect in a moment", { "Retry-After": String(RETRY_AFTER_SECONDS) });
    const { organizationId } = request;
    const limit = this.settings.eventStreamsPerOrg;
    if (this.count(organizationId) >= limit) {
      throw new ServiceError("rate_limited", `Too many event streams open in this organization (at most ${limit}): close one, or retry shortly`, { "Retry-After": String(RETRY_AFTER_SECONDS) });
    }
    const types = request.types === undefined ? undefined : parseTypes(request.types);
    const resume = request.resumeAfter;
    if (resume && !eventIdPattern.test(resume.id)) throw invalid(`${resume.field}: must be an event id (evt_ and 24 hex digits)`);
    // The slot is taken before the first await, so that streams opened together cannot pass the limit.
    const stream = new EventStream(this.store, this.log, this.settings.eventHeartbeatMs, {
      takeLargePage: () => this.takeLargePage(organizationId, stream),
      releaseLargePage: () => this.releaseLargePage(organizationId),
      ended: (ended) => this.forget(organizationId, ended),
    });
    this.remember(organizationId, stream);
    try {
      if (request.inboxId !== undefined && !(await this.store.inboxes.find(organizationId, request.inboxId))) throw notFound("Inbox not found");
      const fromTheStart = resume?.id === beforeEveryEvent;
      const reset = resume === undefined || fromTheStart ? undefined : await this.unknownPosition(organizationId, resume.id);
      const afterId = reset !== undefined || fromTheStart ? null : (resume?.id ?? (await this.store.events.newestId(organizationId)));
      const stillAuthorized = () => organizationOfApiKey(this.store, request.apiKey, this.clock.now()).then((organization) => organization === organizationId, () => false);
      const { inboxId } = request;
      const inboxStillThere = inboxId === undefined ? undefined : () => this.store.inboxes.find(organizationId, inboxId).then((inbox) => inbox !== undefined, () => true);
      return stream.body({ organizationId, afterId, reset, types, inboxId, stillAuthorized, inboxStillThere });
    } catch (error) {
      this.forget(organizationId, stream);
      throw error;
    }
  }

  /**
   * Why a resume id makes its position unknown, told to the client in a `reset` before every
   * event still kept. Older than the retention period, events after it may have been purged.
   * Later than any node's clock could make it and than every event stored (a mangled id), nothing
   * would ever follow it; an id stored while the clock ran ahead, before it was set back, is a
   * position: the events after it follow it (store/event-ids.ts).
   */
  private async unknownPosition(organizationId: string, id: string): Promise<string | undefined> {
    const now = this.clock.now();
    const time = idTime(id);
    if (time < now - this.settings.eventRetentionDays * DAY_MS) return "Events after the given id may have been purged (older than the retention period): reload what you keep; the oldest events still kept follow";
    if (time > now + FUTURE_ID_ALLOWANCE_MS && id > ((await this.store.events.newestId(organizationId)) ?? beforeEveryEvent)) {
      return "The given id is later than any event of this server: reload what you keep; the oldest events still kept follow";
    }
    return undefined;
  }

  /** Server shutdown: every stream ends (its client reconnects elsewhere or later), and no new one opens. */
  closeAll(): void {
    this.closed = true;
    for (const streams of [...this.open.values()]) for (const stream of [...streams]) stream.close();
  }

  /** Takes a place, or puts the stream in line for one. */
  private takeLargePage(organizationId: string, stream: EventStream): boolean {
    if (this.largePages.get(organizationId) < LARGE_PAGES_PER_ORGANIZATION && !this.awaitingPlace.has(organizationId)) {
      this.largePages.increment(organizationId);
      return true;
    }
    const line = this.awaitingPlace.get(organizationId) ?? [];
    line.push(stream);
    this.awaitingPlace.set(organizationId, line);
    return false;
  }

  /** A place is given back: it passes to the stream first in line, else it is free. */
  private releaseLargePage(organizationId: string) {
    const next = this.awaitingPlace.get(organizationId)?.[0];
    if (next) {
      this.leaveLine(organizationId, next);
      return next.placeGranted();
    }
    this.largePages.decrement(organizationId);
  }

  private leaveLine(organizationId: string, stream: EventStream) {
    const line = this.awaitingPlace.get(organizationId);
    if (!line?.includes(stream)) return;
    line.splice(line.indexOf(stream), 1);
    if (line.length === 0) this.awaitingPlace.delete(organizationId);
  }

  private remember(organizationId: string, stream: EventStream) {
    const streams = this.open.get(organizationId) ?? new Set();
    streams.add(stream);
    this.open.set(organizationId, streams);
  }

  private forget(organizationId: string, stream: EventStream) {
    this.leaveLine(organizationId, stream);
    const streams = this.open.get(organizationId);
    streams?.delete(stream);
    if (streams?.size === 0) this.open.delete(organizationId);
  }
}

const encoder = new TextEncoder();

/** The text of one event: its id resumes the stream, its name is the webhook event's, its data the webhook body. */
const eventText = (event: EventRecord) => `id: ${event.id}\nevent: ${event.type}\ndata: ${envelopeBody(event)}\n\n`;

const resetText = (reason: string) => `event: reset\ndata: ${JSON.stringify({ reason })}\n\n`;

interface StreamHooks {
  /** Whether a place for a large page was free, now taken; when not, the stream is in line for one (placeGranted). */
  takeLargePage(): boolean;
  releaseLargePage(): void;
  ended(stream: EventStream): void;
}

/** UTF-16's first half of a pair: a piece that ended after it would be encoded as U+FFFD, and so would the next piece's start. */
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

class EventStream {
  private start?: StreamStart;
  private controller?: ReadableStreamDefaultController<Uint8Array>;
  private afterId: string | null = null;
  private page: EventRecord[] = [];
  /** What is left to write of the current event's text. */
  private unwritten?: { text: string; from: number };
  /** A page is due: woken by a commit or the poll, or the last page was cut short. */
  private due = true;
  /**
   * The stream's place for large pages: none; granted, while in line, for the page it reads next;
   * or held by the page it is writing, until its client has taken the page.
   */
  private place: "none" | "granted" | "sending" = "none";
  /** The page read was large and no place was free: read again when one is granted, not at each commit. */
  private awaitingPlace = false;
  private ended = false;
  /** The inbox the stream is filtered by was deleted: no event of it can come after those committed with the deletion. */
  private inboxGone = false;
  private waiting?: () => void;
  private lastWriteAt = performance.now();
  /** When the key was last found valid: the guard found it so as the stream opened. */
  private authorizedAt = performance.now();
  /** The key's look-up under way, and the revocations seen when it began. */
  private keyLookup?: { since: number; holds: Promise<boolean> };
  /** Revocations in the organization so far: a page read across one is shown only once the key is found to hold. */
  private revocationsSeen = 0;
  private readonly pollMs: number;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    private readonly heartbeatMs: number,
    private readonly hooks: StreamHooks,
  ) {
    this.pollMs = Math.min(POLL_INTERVAL_MS, heartbeatMs);
  }

  body(start: StreamStart): ReadableStream<Uint8Array> {
    this.start = start;
    this.afterId = start.afterId;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
          // The position alone (an id without data dispatches nothing but sets the last event id,
          // §9.2.6): a client reconnecting before any event came resumes from here, missing none.
          const position = `id: ${start.afterId ?? beforeEveryEvent}\n`;
          this.write(`retry: ${RECONNECT_MS}\n${position}\n${start.reset === undefined ? "" : resetText(start.reset)}`);
        },
        pull: () =>
          this.next().catch((error: unknown) => {
            this.log.error("event stream failed", { organizationId: start.organizationId, error });
            this.end();
            throw error;
          }),
        // The client went away.
        cancel: () => this.end(),
      },
      // One chunk queued at most: the next is made when the connection has taken this one.
      { highWaterMark: 1 },
    );
  }

  wake() {
    if (this.awaitingPlace) return;
    this.due = true;
    this.waiting?.();
  }

  checkKeyNow() {
    this.revocationsSeen++;
    this.authorizedAt = -Infinity;
    // One in line for a place looks its key up when woken, without reading its page again.
    if (!this.awaitingPlace) this.due = true;
    this.waiting?.();
    // A stream still opening has no key to look up yet: its first page looks it up.
    if (!this.start) return;
    // Looked up now, not when the client next reads: a revoked key's client that had stopped
    // reading in the middle of a large page kept the stream, and its place, as long as it stayed.
    void this.authorized().then((holds) => holds || this.cutOff());
  }

  placeGranted() {
    this.place = "granted";
    this.awaitingPlace = false;
    this.wake();
  }

  close() {
    if (this.ended) return;
    this.end();
    this.controller?.close();
  }

  /**
   * The next chunk: a piece of the current event, else the page's next event, else a new page
   * when one is due, else a heartbeat once the connection was quiet long enough. Called once the
   * client has taken the chunk before, so a large page's place is given back here.
   */
  private async next(): Promise<void> {
    while (!this.ended) {
      if (this.unwritten) return this.writePiece(this.unwritten);
      const event = this.page.shift();
      if (event) {
        this.unwritten = { text: eventText(event), from: 0 };
        continue;
      }
      if (this.place === "sending") this.releaseLargePage();
      if (this.due) {
        this.due = false;
        // A turn of the event loop per page: a client that takes each event at once read 52,000
        // events kept in one turn, 0.6-0.8 s that held every other request and SMTP session.
        await takeTurn();
        if (this.ended) return;
        // Looked up after the turn, which other work may make long, and again when a key was
        // revoked during the read: its page may hold events committed after the revocation.
        const revocations = this.revocationsSeen;
        if (!(await this.authorized())) return this.close();
        await this.readPage();
        if (revocations !== this.revocationsSeen && !(await this.authorized())) return this.close();
        if (this.inboxGone && !this.awaitingPlace) {
          // Its last events (inbox.deleted among them) were committed with the deletion, before
          // it was seen gone: read on until none is left, then end, as the 404 of a reconnect would.
          if (this.page.length === 0) return this.close();
          this.due = true;
        }
        continue;
      }
      const woken = await this.sleep();
      // In line for a place, no page is due: the key is looked up here, at the poll interval.
      if (this.awaitingPlace && !(await this.authorized())) return this.close();
      // A comment (§9.2.6: a line starting with a colon): clients ignore it, proxies see traffic.
      if (woken === "heartbeat") return this.write(": ping\n\n");
    }
  }

  private writePiece({ text, from }: { text: string; from: number }) {
    let to = Math.min(from + PIECE_CHARS, text.length);
    if (to < text.length && isHighSurrogate(text.charCodeAt(to - 1))) to -= 1;
    this.unwritten = to < text.length ? { text, from: to } : undefined;
    this.write(from === 0 && to === text.length ? text : text.slice(from, to));
  }

  private async readPage() {
    const { organizationId, types, inboxId } = this.start!;
    const page = await this.store.events.readAfter(organizationId, { afterId: this.afterId, limit: PAGE_EVENTS, maxChars: PAGE_CHARS, types, inboxId });
    if (this.ended) return;
    const chars = page.events.reduce((sum, event) => sum + event.payload.length, 0);
    if (chars <= PAGE_CHARS) {
      // A place granted for a page that is no longer large (a filter's events, say) goes on.
      if (this.place === "granted") this.releaseLargePage();
    } else if (this.place === "granted" || this.hooks.takeLargePage()) this.place = "sending";
    else {
      this.awaitingPlace = true;
      return;
    }
    this.page = page.events;
    this.afterId = page.nextAfterId;
    if (page.more) this.due = true;
  }

  private releaseLargePage() {
    this.place = "none";
    this.hooks.releaseLargePage();
  }

  /**
   * Whether the key still holds (and the filter's inbox is still there), looked up once per poll
   * interval at most, however busy the stream. A look-up under way answers every caller that comes
   * before the next revocation: one that found a fresh time would take the key as valid before the
   * look-up says it is not, and one begun before a revocation may have read the key before it went.
   */
  private authorized(): Promise<boolean> {
    if (this.keyLookup?.since === this.revocationsSeen) return this.keyLookup.holds;
    if (!this.keyLookup && performance.now() - this.authorizedAt < this.pollMs) return Promise.resolve(true);
    this.authorizedAt = performance.now();
    const { stillAuthorized, inboxStillThere } = this.start!;
    const holds: Promise<boolean> = (async () => {
      if (inboxStillThere && !this.inboxGone) this.inboxGone = !(await inboxStillThere());
      return stillAuthorized();
    })().finally(() => {
      if (this.keyLookup?.holds === holds) this.keyLookup = undefined;
    });
    this.keyLookup = { since: this.revocationsSeen, holds };
    return holds;
  }

  /**
   * A revoked key's stream ends at once, whether or not its client reads: with an error, not a
   * close, since a close would leave the queued chunks to a client that may never take them.
   */
  private cutOff() {
    if (this.ended) return;
    this.end();
    this.controller?.error(new Error("the stream's API key was revoked"));
  }

  /**
   * Until woken, the poll, or the heartbeat (measured from the last write, on the real clock: it is
   * about sockets). The poll falls a poll interval after the key's last look-up, not after the last
   * event: restarted at each, it let a revoked key's stream go on for nearly two.
   */
  private sleep(): Promise<"woken" | "heartbeat"> {
    const heartbeatIn = this.heartbeatMs - (performance.now() - this.lastWriteAt);
    const pollIn = this.pollMs - (performance.now() - this.authorizedAt);
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.waiting = undefined;
          // A poll either way (but for a place, which only this process gives back); after the heartbeat, once the ping is written.
          if (!this.awaitingPlace) this.due = true;
          resolve(heartbeatIn <= pollIn ? "heartbeat" : "woken");
        },
        Math.max(0, Math.min(heartbeatIn, pollIn)),
      );
      this.waiting = () => {
        clearTimeout(timer);
        this.waiting = undefined;
        resolve("woken");
      };
    });
  }

  private write(text: string) {
    if (this.ended) return;
    this.controller!.enqueue(encoder.encode(text));
    this.lastWriteAt = performance.now();
  }

  private end() {
    if (this.ended) return;
    this.ended = true;
    if (this.place !== "none") this.releaseLargePage();
    this.waiting?.();
    this.hooks.ended(this);
  }
}
