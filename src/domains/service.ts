/** Custom domains of an organization: add, list, look up, verify, rotate DKIM keys, delete. */
import type { App } from "../app";
import { dkimSelector, generateDkimKeys, type DkimKey } from "../dkim/keys";
import { conflict, invalid, notFound, ServiceError } from "../errors";
import { newId } from "../ids";
import { presentTlsReport } from "../mta-sts/present";
import { assertNotPostmasterInbox, deleteMessagesInSlices, removeInbox } from "../inboxes/service";
import { pageOfAll, withTotal, type Page } from "../page";
import type { Aggregates, DkimKeyRecord, DomainRecord, Transaction } from "../store";
import { isSameOrSubdomain, normalizeDomainName } from "./name";
import { claimRecord, publishesClaim } from "./ownership";
import { checkedRecords, presentDomain, presentRecord } from "./present";
import { dkimRecordName, MAX_CUSTOM_DOMAIN_LENGTH } from "./records";
import { SETUP_CHECK_INTERVAL_MS } from "./status";
import { saveDomainState, verifyDomainRecords } from "./verification";

/** `{domainId}` in paths: the identifier, or the name in any case or IDN form. */
async function findDomain(store: Aggregates, organizationId: string, idOrName: string): Promise<DomainRecord> {
  const row = await store.domains.find(organizationId, normalizeDomainName(idOrName) ?? idOrName);
  if (!row) throw notFound("Domain not found");
  return row;
}

/**
 * The claim another organization holds on the name that this one takes over: the one whose claim
 * record (./ownership.ts) it has published, `provenClaimId`. Undefined when the name is free. 409
 * for a name the organization has already, and for another's claim without the proof, saying
 * what to publish.
 */
function claimToTake(app: App, existing: DomainRecord | undefined, organizationId: string, name: string, provenClaimId: string | undefined): DomainRecord | undefined {
  if (!existing) return undefined;
  if (existing.organizationId === organizationId) throw conflict(`Domain ${name} already exists`);
  if (existing.id === provenClaimId) return existing;
  const record = claimRecord(app.store, organizationId, existing.id, name);
  throw conflict(`Domain ${name} is already claimed by another organization. If it is yours, publish the TXT record ${record.name} "${record.value}" and add it again: the claim then moves to this organization`);
}

/**
 * New keys are pending: a key signs only once its record is seen in DNS (verification turns it
 * active), so mail from a domain is never signed with a key receivers cannot find.
 */
const keyRows = (keys: DkimKey[], domain: string, organizationId: string, now: number): DkimKeyRecord[] =>
  keys.map((key) => ({ id: newId("dkim"), domain, organizationId, ...key, status: "pending", createdAt: now, updatedAt: now }));

export async function createDomain(app: App, organizationId: string, input: { name: string }) {
  const name = normalizeDomainName(input.name);
  if (!name) throw invalid("name: must be a domain name such as example.com");
  if (name.length > MAX_CUSTOM_DOMAIN_LENGTH) throw invalid(`name: at most ${MAX_CUSTOM_DOMAIN_LENGTH} characters (as A-labels), so that the names of its DKIM records stay within DNS's 253`);
  const serviceDomain = app.config.mailDomain.toLowerCase();
  if (isSameOrSubdomain(name, serviceDomain)) throw invalid(`name: ${name} is the service's own mail domain or a subdomain of it, which needs no verification`);
  // The server's own names: mail to postmaster@ and abuse@ at its host name (RFC 5321 §4.5.1), its
  // bounces and its TLS reports are the operator's, which a tenant's domain would take.
  const ownName = ([["INBOXD_HOSTNAME", app.config.hostname], ["INBOXD_API_HOSTNAME", app.config.apiHostname]] as const).find(([, host]) => host?.toLowerCase() === name);
  if (ownName) throw invalid(`name: ${name} is this server's host name (${ownName[0]}), whose role addresses and reports are the operator's`);
  const held = await app.store.domains.findByName(name);
  const proven = held && held.organizationId !== organizationId && (await publishesClaim(app.resolver, claimRecord(app.store, organizationId, held.id, name)));
  const provenClaimId = proven ? held.id : undefined;
  claimToTake(app, held, organizationId, name, provenClaimId);
  const date = app.clock.date();
  const suffix = await unpublishedSuffix(app, name, date);
  const keys = (await generateDkimKeys(date)).map((key) => ({ ...key, selector: dkimSelector(date, key.algorithm, suffix) }));
  if (held && provenClaimId) await deleteMessagesOfInboxesOnDomain(app, held.organizationId, name);
  return app.store.transaction(async (tx) => {
    // Again: another request may have claimed the name while the keys were being generated.
    const taken = claimToTake(app, await tx.domains.findByName(name), organizationId, name, provenClaimId);
    if (taken) {
      const inboxes = await tx.domains.inboxesOnDomain(taken.organizationId, name);
      await removeDomain(app, tx, taken, inboxes);
      app.log.warn("domain claim moved to the organization that published its claim record", { domain: name, from: taken.organizationId, to: organizationId, inboxesDeleted: inboxes.length });
    }
    const now = app.clock.now();
    const row: DomainRecord = {
      id: newId("dom"),
      organizationId,
      name,
      status: "pending",
      receiving: false,
      sending: false,
      recordChecks: {},
      verifiedAt: null,
      recordsChangedAt: now,
      checkedAt: null,
      // The owner publishes the records after seeing them: the first background look is a few minutes away.
      nextCheckAt: now + SETUP_CHECK_INTERVAL_MS,
      createdAt: now,
      updatedAt: now,
    };
    await tx.domains.insert(row);
    // Keys of the name that no domain holds are the service's own, left from a former
    // INBOXD_MAIL_DOMAIN: active, they signed this organization's mail before any record of its
    // own verified (and the same day their selectors clashed with its new keys': a 500).
    const former = await tx.dkimKeys.forDomain(name);
    if (former.length > 0) {
      await tx.dkimKeys.removeForDomain(name);
      app.log.warn("DKIM keys of a former service mail domain removed, as an organization added the name", { domain: name, selectors: former.map((key) => key.selector).join(",") });
    }
    await tx.dkimKeys.insert(keyRows(keys, name, organizationId, now));
    return presentDomain(app, tx, row);
  });
}

export async function listDomains(app: App, organizationId: string, page: Page) {
  const rows = await app.store.domains.list(organizationId, page.page, page.per);
  return withTotal(page, await Promise.all(rows.map((row) => presentDomain(app, app.store, row))), () => app.store.domains.count(organizationId));
}

export const getDomain = async (app: App, organizationId: string, idOrName: string) => presentDomain(app, app.store, await findDomain(app.store, organizationId, idOrName));

/** A list as every list is, though a domain's records fit the first page whatever its size. */
export async function domainDnsRecords(app: App, organizationId: string, idOrName: string, page: Page) {
  const row = await findDomain(app.store, organizationId, idOrName);
  return pageOfAll(page, checkedRecords(app, row, await app.store.dkimKeys.forDomain(row.name)).map(presentRecord));
}

/** The TLS reports (RFC 8460) received about the domain, newest first. */
export async function listTlsReports(app: App, organizationId: string, idOrName: string, page: Page) {
  const row = await findDomain(app.store, organizationId, idOrName);
  const rows = await app.store.tlsReports.forDomain(row.name, row.createdAt, page.per, (page.page - 1) * page.per);
  return withTotal(page, rows.map(presentTlsReport), () => app.store.tlsReports.countForDomain(row.name, row.createdAt));
}

export async function verifyDomain(app: App, organizationId: string, idOrName: string) {
  const verified = await verifyDomainRecords(app, await findDomain(app.store, organizationId, idOrName));
  if (!verified) throw notFound("Domain not found");
  return presentDomain(app, app.store, verified);
}

/**
 * The selector suffix for a new generation of keys today: "" for the first, then one past the
 * highest in use ("2", "3", ...), so a record name once shown with one key never gets another.
 */
function nextRotationSuffix(keys: DkimKeyRecord[], date: Date): string {
  let highest = 0;
  for (const key of keys) {
    const todays = dkimSelector(date, key.algorithm);
    const suffix = key.selector.startsWith(todays) ? key.selector.slice(todays.length) : undefined;
    if (suffix !== undefined && /^\d*$/.test(suffix)) highest = Math.max(highest, suffix ? Number(suffix) : 1);
  }
  return highest === 0 ? "" : String(highest + 1);
}

/**
 * The selector suffix of a new domain's first keys: today's first whose records DNS does not
 * publish yet. A name deleted and added again the same day got new keys under the names its
 * earlier keys were published at: resolvers that cached those refused the new signatures for up
 * to their TTL. A look-up that fails counts as nothing published.
 */
async function unpublishedSuffix(app: App, name: string, date: Date): Promise<string> {
  for (let generation = 1; generation <= MAX_KEY_GENERATIONS_PER_DAY; generation++) {
    const suffix = generation === 1 ? "" : String(generation);
    const names = (["rsa-sha256", "ed25519-sha256"] as const).map((algorithm) => dkimRecordName(dkimSelector(date, algorithm, suffix), name));
    const published = await Promise.all(names.map((recordName) => app.resolver.txt(recordName).then((records) => records.length > 0, () => false)));
    if (!published.includes(true)) return suffix;
  }
  return generationAllowed(String(MAX_KEY_GENERATIONS_PER_DAY + 1), date);
}

/**
 * Key generations of a domain in one UTC day, its first included: each rotation's selectors take
 * the next number, and a client that rotated in a loop made them without end (the 10,000th made
 * record names too long for DNS; each costs an RSA key's generation).
 */
const MAX_KEY_GENERATIONS_PER_DAY = 10;

/** The suffix, unless the day's generations are spent: 429 until the next UTC day. */
function generationAllowed(suffix: string, date: Date): string {
  if (suffix === "" || Number(suffix) <= MAX_KEY_GENERATIONS_PER_DAY) return suffix;
  const nextDay = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
  throw new ServiceError("rate_limited", `At most ${MAX_KEY_GENERATIONS_PER_DAY} generations of DKIM keys a day per domain: rotate again after midnight UTC`, {
    "Retry-After": String(Math.ceil((nextDay - date.getTime()) / 1000)),
  });
}

/**
 * Adds a new key pair under new selectors. The current keys keep signing until the new records
 * verify; then they retire but stay listed (mail they signed is still being verified) until
 * their records are removed from DNS. Keys of an earlier rotation that never verified are
 * replaced, since nothing was ever signed with them.
 */
export async function rotateDkimKeys(app: App, organizationId: string, idOrName: string) {
  const date = app.clock.date();
  // Looked at before the keys are made, which costs an RSA key's generation, and again in the transaction.
  generationAllowed(nextRotationSuffix(await app.store.dkimKeys.forDomain((await findDomain(app.store, organizationId, idOrName)).name), date), date);
  const generated = await generateDkimKeys(date);
  return app.store.transaction(async (tx) => {
    const row = await findDomain(tx, organizationId, idOrName);
    const now = app.clock.now();
    const keys = await tx.dkimKeys.forDomain(row.name);
    const suffix = generationAllowed(nextRotationSuffix(keys, date), date);
    for (const key of keys) if (key.status === "pending") await tx.dkimKeys.remove(key.id);
    const renamed = generated.map((key) => ({ ...key, selector: dkimSelector(date, key.algorithm, suffix) }));
    await tx.dkimKeys.insert(keyRows(renamed, row.name, organizationId, now));
    const saved = await saveDomainState(app, tx, { ...row, recordsChangedAt: now }, row.recordChecks, now, true);
    return presentDomain(app, tx, saved);
  });
}

/**
 * Deletes the domain and its keys. Inboxes on it would lose their mail: refused while any exist,
 * unless `force`, which deletes them too (each with its messages, and an inbox.deleted event).
 */
export async function deleteDomain(app: App, organizationId: string, idOrName: string, options: { force?: boolean } = {}) {
  if (options.force) await deleteMessagesOfInboxesOnDomain(app, organizationId, (await findDomain(app.store, organizationId, idOrName)).name);
  return app.store.transaction(async (tx) => {
    const row = await findDomain(tx, organizationId, idOrName);
    const inboxes = await tx.domains.inboxesOnDomain(organizationId, row.name);
    if (inboxes.length && !options.force) {
      throw conflict(`Domain ${row.name} is used by ${inboxes.length} inbox${inboxes.length === 1 ? "" : "es"}; delete ${inboxes.length === 1 ? "it" : "them"} first, or pass force=true to delete them with the domain`);
    }
    const domain = await presentDomain(app, tx, row);
    await removeDomain(app, tx, row, inboxes);
    return domain;
  });
}

/**
 * The messages of the organization's inboxes on the domain, deleted a slice at a time before the
 * transaction that deletes them (deleteMessagesInSlices); none while one of them is the operator's
 * postmaster inbox (409), which no deletion takes.
 */
async function deleteMessagesOfInboxesOnDomain(app: App, organizationId: string, name: string): Promise<void> {
  const inboxes = await app.store.domains.inboxesOnDomain(organizationId, name);
  for (const inbox of inboxes) assertNotPostmasterInbox(app, inbox);
  for (const inbox of inboxes) await deleteMessagesInSlices(app, organizationId, inbox.id);
}

/** Deletes the domain (its keys go with it) and the given inboxes of its organization, in the caller's transaction. */
async function removeDomain(app: App, tx: Transaction, row: DomainRecord, inboxes: { id: string }[]): Promise<void> {
  for (const inbox of inboxes) await removeInbox(app, tx, row.organizationId, inbox.id);
  await tx.domains.delete(row.id);
}
