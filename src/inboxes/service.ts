/** Inbox rules in one place: addresses, uniqueness, and the events inbox changes emit. */
import type { App } from "../app";
import { assertUsableInboxDomain } from "../domains/hosted";
import { conflict, invalid, notFound } from "../errors";
import { takeTurn } from "../event-loop";
import { newId, randomToken } from "../ids";
import { baseAddress, normalizeAddress, parseAddress, type ParsedAddress } from "../mail/address";
import { isHeaderSafe } from "../mail/header-text";
import { withTotal, type Listing, type Page } from "../page";
import type { Aggregates, InboxRecord, Transaction } from "../store";
import { isOperatorAddress, isReservedAddress, operatorInbox, serverAddressUse } from "./operator-addresses";
import { presentInbox, presentInboxWithCounts, type Inbox, type InboxWithCounts } from "./present";

/** A random, unguessable local part (80 bits) on the service's own mail domain. */
export const randomInboxAddress = (mailDomain: string) => `${randomToken(10)}@${mailDomain.toLowerCase()}`;

/** Creates the inbox and its `inbox.created` event, in the caller's transaction. */
export async function insertInbox(app: App, tx: Transaction, organizationId: string, input: { name?: string; email: string }) {
  if (await tx.inboxes.findByEmail(input.email)) throw conflict("Email address already in use");
  const now = app.clock.now();
  const row = { id: newId("inb"), organizationId, name: input.name || null, email: input.email.toLowerCase(), createdAt: now, updatedAt: now };
  if (!(await tx.inboxes.insert(row))) throw conflict("Email address already in use");
  const inbox = presentInbox(row);
  await tx.events.emit({ organizationId, type: "inbox.created", inboxId: row.id, payload: inbox }, now);
  return inbox;
}

/** The requested address in stored form, or a random one on the service domain; its domain is checked in the transaction that creates the inbox. */
function inboxAddress(app: App, email: string | undefined): { address: string; domain: string } {
  if (email === undefined) return { address: randomInboxAddress(app.config.mailDomain), domain: app.config.mailDomain };
  const given = email.trim();
  const parsed = parseAddress(given);
  // A quoted local part ("a b"@d) is valid mail syntax but no address anyone should have to type;
  // one that needs no quotes ("abc"@d, parsed as abc@d) is refused alike, as the docs say.
  if (!parsed || parsed.local.startsWith('"') || given.startsWith('"')) throw invalid("email: must be an email address such as support@example.com");
  const address = parsed.address.toLowerCase();
  assertCreatableAddress(app, parsed, address);
  return { address, domain: parsed.domain };
}

/** Throws a 422 naming `email` for an address whose mail would belong to someone else. */
function assertCreatableAddress(app: App, parsed: ParsedAddress, address: string): void {
  // RFC 5233: mail to name+tag@domain reaches name@domain, so every tag is that inbox owner's to
  // hand out; an inbox name+tag@ would take part of their mail, on any domain.
  if (parsed.local.includes("+")) {
    throw invalid(`email: "+" may not appear in an inbox address: mail to name+tag@${parsed.domain} is delivered to name@${parsed.domain} (RFC 5233 subaddressing)`);
  }
  if (isReservedAddress(app, address)) {
    throw invalid(`email: ${address} is reserved for the operator of ${parsed.domain} (a role address of RFC 2142, or one that certificate authorities use to validate the domain); choose another name, or an address on a domain of your own`);
  }
  const serverUse = serverAddressUse(app, address);
  if (serverUse) throw invalid(`email: ${address} is this server's own address, ${serverUse}; choose another name`);
  // Were it deleted, another organization could otherwise recreate it and receive the operator's mail.
  if (address === app.config.postmasterInbox) throw invalid(`email: ${address} is reserved for the operator's postmaster mail`);
}

/** An inbox's name is the display name of its mail's From field. */
function assertUsableName(name: string | null | undefined): void {
  if (name && !isHeaderSafe(name)) throw invalid("name: must not contain line breaks or control characters");
}

export async function createInbox(app: App, organizationId: string, input: { name?: string; email?: string }): Promise<Inbox> {
  assertUsableName(input.name);
  const { address, domain } = inboxAddress(app, input.email);
  return app.store.transaction(async (tx) => {
    await assertUsableInboxDomain(app, tx, organizationId, domain);
    return insertInbox(app, tx, organizationId, { name: input.name, email: address });
  });
}

export async function listInboxes(app: App, organizationId: string, page: Page): Promise<Listing<InboxWithCounts>> {
  return withTotal(page, await withCounts(app.store, await app.store.inboxes.list(organizationId, page.page, page.per)), () => app.store.inboxes.count(organizationId));
}

/** The inboxes with their message and unread totals, read in one query whatever their number. */
async function withCounts(store: Aggregates, rows: InboxRecord[]): Promise<InboxWithCounts[]> {
  const counts = await store.inboxes.counts(rows.map((row) => row.id));
  return rows.map((row, index) => presentInboxWithCounts(row, counts[index]));
}

/** The inbox if it belongs to the organization; 404 `Inbox not found` otherwise. */
export async function requireInbox(store: Aggregates, organizationId: string, inboxId: string): Promise<InboxRecord> {
  const row = await store.inboxes.find(organizationId, inboxId);
  if (!row) throw notFound("Inbox not found");
  return row;
}

/**
 * The inbox of this server (any organization) that mail to `address` reaches, if any: the exact
 * address in any case, else, by RFC 5233 subaddressing, `name@domain` for `name+tag@domain`. The
 * operator's addresses (operator-addresses.ts) reach the operator's inbox: a reserved name always,
 * even where an organization created it before it was reserved; postmaster elsewhere when no
 * inbox of the domain's organization takes it.
 */
export async function inboxForAddress(app: App, store: Aggregates, address: string): Promise<InboxRecord | undefined> {
  const exact = normalizeAddress(address);
  if (!exact) return undefined;
  const base = baseAddress(exact)!;
  if (isReservedAddress(app, base)) return operatorInbox(app, store);
  const inbox = (await store.inboxes.findByEmail(exact)) ?? (base === exact ? undefined : await store.inboxes.findByEmail(base));
  return inbox ?? ((await isOperatorAddress(app, store, base)) ? operatorInbox(app, store) : undefined);
}

export const getInbox = async (app: App, organizationId: string, inboxId: string): Promise<InboxWithCounts> =>
  (await withCounts(app.store, [await requireInbox(app.store, organizationId, inboxId)]))[0]!;

/** `name: null` (or "") removes the name. */
export function updateInbox(app: App, organizationId: string, inboxId: string, input: { name?: string | null }): Promise<Inbox> {
  assertUsableName(input.name);
  return app.store.transaction(async (tx) => {
    // The events before the row, as removeInbox takes them.
    if (input.name !== undefined) await tx.events.holdOrder([organizationId]);
    const current = await requireInbox(tx, organizationId, inboxId);
    if (input.name === undefined) return presentInbox(current);
    const now = app.clock.now();
    const inbox = presentInbox((await tx.inboxes.rename(organizationId, inboxId, input.name || null, now))!);
    await tx.events.emit({ organizationId, type: "inbox.updated", inboxId, payload: inbox }, now);
    return inbox;
  });
}

/**
 * 409 for the inbox INBOXD_POSTMASTER_INBOX names: the API refuses its address to every
 * organization (assertCreatableAddress), so deleted it could not come back while the setting holds,
 * and the operator's mail (postmaster, abuse) would wait in senders' queues (451) meanwhile.
 */
export function assertNotPostmasterInbox(app: App, inbox: Pick<InboxRecord, "email">): void {
  if (inbox.email.toLowerCase() !== app.config.postmasterInbox) return;
  throw conflict(`${inbox.email} receives the operator's postmaster mail (INBOXD_POSTMASTER_INBOX); it can be deleted once that setting names another inbox`);
}

/** Deletes the inbox with its threads and messages; returns it as it was, which `inbox.deleted` carries. */
export async function deleteInbox(app: App, organizationId: string, inboxId: string): Promise<Inbox> {
  // Its address never changes: checked once, before any message goes.
  assertNotPostmasterInbox(app, await requireInbox(app.store, organizationId, inboxId));
  await deleteMessagesInSlices(app, organizationId, inboxId);
  return app.store.transaction((tx) => removeInbox(app, tx, organizationId, inboxId));
}

/**
 * Messages deleted per transaction before an inbox is (about 50 µs each on the embedded engine,
 * with their sources, attachments and search index rows): deleted in one statement with the
 * inbox, 20,000 held the event loop, every organization's requests and SMTP greetings, 0.9 s.
 */
const MESSAGES_PER_SLICE = 64;

/**
 * Deletes an inbox's messages a slice per transaction and turn of the event loop, a thread at a
 * time (InboxesStore.deleteMessages), so that the transaction that deletes the inbox (removeInbox)
 * has little left to take. Meanwhile the inbox is still shown, with fewer messages and threads,
 * its counts right. Not waiting for the disk: the inbox's own commit does, and a crash before it
 * leaves an inbox with fewer messages, whose delete the client repeats.
 */
export async function deleteMessagesInSlices(app: App, organizationId: string, inboxId: string): Promise<void> {
  const slice = async (tx: Transaction) => {
    // The organization's events before any row, as removeInbox: the outbound queue's turn takes
    // them before the deliveries and messages a slice deletes (on PostgreSQL they deadlocked).
    await tx.events.holdOrder([organizationId]);
    return tx.inboxes.deleteMessages(organizationId, inboxId, MESSAGES_PER_SLICE);
  };
  while ((await app.store.transaction(slice, { waitForDisk: false })) > 0) {
    await takeTurn();
  }
}

/** deleteInbox in the caller's transaction. */
export async function removeInbox(app: App, tx: Transaction, organizationId: string, inboxId: string): Promise<Inbox> {
  // The organization's events first, as every transaction that emits takes them before any row
  // (but a domain's, which comes before them): a send or an inbound turn storing mail into the
  // inbox holds them already, and waits for no lock this delete holds (on PostgreSQL they
  // deadlocked: a 503).
  await tx.events.holdOrder([organizationId]);
  const row = await tx.inboxes.delete(organizationId, inboxId);
  if (!row) throw notFound("Inbox not found");
  // A kept response to a send from it holds its mail (attachment content included) for 24 hours.
  await tx.idempotencyKeys.forgetInbox(organizationId, inboxId);
  const inbox = presentInbox(row);
  await tx.events.emit({ organizationId, type: "inbox.deleted", inboxId, payload: inbox }, app.clock.now());
  return inbox;
}
