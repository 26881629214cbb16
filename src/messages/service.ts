/** Reading messages and threads of an inbox: lists newest first, a thread's messages oldest first. */
import type { App } from "../app";
import { notFound } from "../errors";
import { requireInbox } from "../inboxes/service";
import { lookedAhead, mapListing, withTotal, type Listing, type Page } from "../page";
import { presentMessageSummary, presentShownMessages, presentThreads, withContentEncoded, type LargeAnswer, type MessageSummary, type Thread, type ShownMessage } from "./present";
import { searchMessagePage } from "./search";
import type { AttachmentRecord, MessageRecord } from "../store";

/**
 * A page of the inbox's messages, without a total: the list is the API's busiest read, and a COUNT
 * walks the inbox's whole index (over 10,000 messages it took 5 times the page's own read, the
 * route a third of its rate), so the page reads one row more than it shows, which says whether
 * another page follows. With `query`, the page of matches, likewise without a total (search.ts,
 * searchMessagePage: counting every match costs what a page of them avoids). With `label`, the
 * page of the messages with that label, read from the labels' index; with both, the matches that
 * have the label.
 */
export async function listMessages(app: App, organizationId: string, inboxId: string, options: Page & { query?: string; label?: string }): Promise<Listing<MessageSummary>> {
  const page = { page: options.page, per: options.per };
  if (options.query?.trim()) {
    await requireInbox(app.store, organizationId, inboxId);
    const found = await searchMessagePage(app.store, inboxId, {
      query: options.query,
      page: options.page,
      per: options.per,
      budgetMs: app.config.searchBudgetMs,
      organizationId,
      walksPerOrganization: app.config.searchConcurrencyPerOrg,
      label: options.label,
    });
    return mapListing(found, presentMessageSummary);
  }
  const rows =
    options.label === undefined
      ? await app.store.messages.list(organizationId, inboxId, options.page, options.per, 1)
      : await app.store.messages.listLabeled(organizationId, inboxId, options.label, options.page, options.per, 1);
  // The busiest read skips the inbox look-up when the page shows the inbox exists: only an empty
  // page may come from an unknown inbox or another organization's, which is 404.
  if (rows.length === 0) await requireInbox(app.store, organizationId, inboxId);
  return mapListing(lookedAhead(page, rows), presentMessageSummary);
}

/**
 * Every field; without `attachmentContent`, the attachments listed without their content, which is
 * then not read. The description gives this read a single 404, `Message not found`, whatever is unknown.
 */
export async function getMessage(app: App, organizationId: string, inboxId: string, messageId: string, attachmentContent = true): Promise<ShownMessage> {
  const row = await app.store.messages.find(organizationId, inboxId, messageId);
  if (!row) throw notFound("Message not found");
  return (await presentShownMessages(app.store, [row], app.config.deliveryRetryDelays, attachmentContent))[0]!;
}

/** The RFC 5322 source as stored: for a received message, with our Received and Authentication-Results on top. */
export async function getMessageSource(app: App, organizationId: string, inboxId: string, messageId: string): Promise<Buffer> {
  const source = (await app.store.messages.find(organizationId, inboxId, messageId)) && (await app.store.messages.rawSource(messageId));
  if (!source) throw notFound("Message not found");
  return source;
}

/** One attachment's bytes, found only through a message of the caller's inbox, hence 404 for another organization's. */
export async function getAttachment(app: App, organizationId: string, inboxId: string, messageId: string, attachmentId: string): Promise<AttachmentRecord> {
  const attachment = (await app.store.messages.find(organizationId, inboxId, messageId)) && (await app.store.messages.attachment(messageId, attachmentId));
  if (!attachment) throw notFound("Attachment not found");
  return attachment;
}

/** With `label`, only the threads with at least one message with that label. */
export async function listThreads(app: App, organizationId: string, inboxId: string, options: Page & { label?: string }): Promise<Listing<Thread>> {
  await requireInbox(app.store, organizationId, inboxId);
  const page = { page: options.page, per: options.per };
  const { label } = options;
  const rows = label === undefined ? await app.store.threads.list(inboxId, page.page, page.per) : await app.store.threads.listLabeled(inboxId, label, page.page, page.per);
  return withTotal(page, await presentThreads(app.store, rows), () => (label === undefined ? app.store.threads.count(inboxId) : app.store.threads.countLabeled(inboxId, label)));
}

/**
 * The thread with its messages, oldest first; like a message read, `Thread not found` for any
 * unknown id. In pieces, each message is read when its piece is made: a thread holds up to 100
 * messages of up to the size limit each, gigabytes at once. A message deleted meanwhile is left out.
 */
export async function getThread(app: App, organizationId: string, inboxId: string, threadId: string, attachmentContent = true): Promise<LargeAnswer<Thread & { messages: ShownMessage[] }>> {
  const row = await app.store.threads.find(organizationId, inboxId, threadId);
  if (!row) throw notFound("Thread not found");
  const thread = (await presentThreads(app.store, [row]))[0]!;
  const sizes = await app.store.messages.contentSizesInThread(row.id);
  const retryDelays = app.config.deliveryRetryDelays;
  const shownMessages = async (rows: MessageRecord[]) => Promise.all((await presentShownMessages(app.store, rows, retryDelays, attachmentContent)).map((message) => withContentEncoded(message)));
  return {
    contentBytes: sizes.reduce((sum, message) => sum + message.textBytes + (attachmentContent ? message.attachmentBytes : 0), 0),
    whole: async () => ({ ...thread, messages: await shownMessages(await app.store.messages.listByThread(row.id)) }),
    async *pieces() {
      // The thread's own fields, then `messages` last, as the whole value has them.
      yield `${JSON.stringify(thread).slice(0, -1)},"messages":[`;
      let separator = "";
      for (const { id } of sizes) {
        const stored = await app.store.messages.find(organizationId, inboxId, id);
        if (!stored) continue;
        const [message] = await shownMessages([stored]);
        yield `${separator}${JSON.stringify(message)}`;
        separator = ",";
      }
      yield "]}";
    },
  };
}
