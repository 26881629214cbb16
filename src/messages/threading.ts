/**
 * Threads by Message-ID (RFC 5322 §3.6.4): a message joins the thread of the message it answers,
 * found through In-Reply-To, then References from the most recent back, among the Message-IDs
 * stored in the same inbox.
 */
import { newId } from "../ids";
import { headerSafe } from "../mail/header-text";
import type { Aggregates, InboxRecord } from "../store";

/**
 * Message-IDs looked up per message, In-Reply-To's first, then References' from the most recent
 * back: each is a query on the event loop, and a header of 256 KiB can name 20,000.
 */
const maxMessageIdsLookedUp = 20;
/** RFC 5322 §3.6.4 lets a writer trim References; inboxd keeps the first and the latest ones. */
const maxReferencesWritten = 20;
/**
 * Messages a thread takes by Message-ID; the next starts a thread of its own, as a Gmail
 * conversation does past 100. Anyone can answer a message, and a thread is read whole (GET
 * .../threads/{id} returns its messages in full): without a bound, outside senders could grow
 * one to any size. A reply sent through the API still joins its original's thread.
 */
export const MAX_THREAD_MESSAGES = 100;

/**
 * The longest Message-ID kept, in UTF-8 bytes: a line's length (RFC 5322 §2.1.1), which a msg-id
 * cannot fold past. PostgreSQL's index of an inbox's Message-IDs refuses an entry over about
 * 2,700 bytes: a message with such an id was answered 250, then never stored, and tried again
 * every 2 hours (999 CJK characters are 2,954 bytes).
 */
const MAX_MESSAGE_ID_BYTES = 998;

/** The msg-ids in a header value: `<a@b> <c@d>`; a bare id without brackets is taken whole. */
export function messageIdsIn(value: string | undefined): string[] {
  if (!value) return [];
  const bracketed = value.match(/<[^<>\s]+>/g);
  const bare = value.trim();
  // `<>` and the like name no message: no id at all, rather than one that every such message shares.
  const ids = bracketed ?? (bare && !/[\s<>]/.test(bare) ? [`<${bare}>`] : []);
  return ids.filter((id) => Buffer.byteLength(id) <= MAX_MESSAGE_ID_BYTES);
}

/** The stored form of one Message-ID: `<id>`, or undefined when the value holds none. */
export const normalizeMessageId = (value: string | undefined) => messageIdsIn(value)[0];

/** What decides a new message's thread in its inbox. */
export interface ThreadClues {
  /** The thread it continues when that is known already (a reply sent through the API). */
  threadId?: string;
  inReplyTo?: string;
  references: string[];
  /** The subject of a thread it starts. */
  subject: string;
}

/**
 * The thread a new message of the inbox joins, counted one message more: the one given, else the
 * one it answers (by its Message-IDs), else a new thread. Sent and received messages alike.
 */
export async function assignThread(store: Aggregates, inbox: InboxRecord, clues: ThreadClues, now: number): Promise<string> {
  const threadId = clues.threadId ?? (await existingThread(store, inbox, clues));
  if (threadId) {
    await store.threads.addMessage(threadId, now);
    return threadId;
  }
  return (await store.threads.insert({ id: newId("thr"), organizationId: inbox.organizationId, inboxId: inbox.id, subject: clues.subject, createdAt: now })).id;
}

/**
 * The thread an incoming message continues in this inbox: the first its Message-IDs name that has
 * room for it. Past a full thread the look-up goes on, so that an answer that also names the
 * thread which took the full one's next answer joins that one.
 */
async function existingThread(store: Aggregates, inbox: InboxRecord, headers: { inReplyTo?: string; references: string[] }): Promise<string | undefined> {
  const candidates = [...messageIdsIn(headers.inReplyTo), ...headers.references.flatMap(messageIdsIn).reverse()];
  const full = new Set<string>();
  for (const id of candidates.slice(0, maxMessageIdsLookedUp)) {
    const threadId = await store.messages.threadOfMessageId(inbox.id, id);
    if (!threadId || full.has(threadId)) continue;
    const thread = await store.threads.find(inbox.organizationId, inbox.id, threadId);
    if (thread && thread.messageCount < MAX_THREAD_MESSAGES) return threadId;
    full.add(threadId);
  }
  return undefined;
}

/** References of an answer to `parent`: the parent's References (or In-Reply-To), then its Message-ID. */
export function referencesOfReply(parent: { references: string[]; inReplyTo: string | null; messageIdHeader: string | null }): string[] {
  const chain = parent.references.length > 0 ? parent.references : messageIdsIn(parent.inReplyTo ?? undefined);
  const all = parent.messageIdHeader ? [...chain, parent.messageIdHeader] : chain;
  return all.length <= maxReferencesWritten ? all : [all[0]!, ...all.slice(all.length - maxReferencesWritten + 1)];
}

/**
 * `Re: ` once: an answer to "Re: x" keeps "Re: x" (RFC 5322 §3.6.5). A received subject can decode
 * to line breaks (an encoded word of `=0A`), which a send refuses in a subject it is given: the
 * reply's is made safe as the wire would show it, so that a reply draft can be sent as filled in.
 */
export function replySubject(subject: string): string {
  const safe = headerSafe(subject);
  return /^re:/i.test(safe.trim()) ? safe : `Re: ${safe}`;
}
