/**
 * Access rules: the allow and block lists of an organization and of its inboxes, for the mail they
 * receive and the mail they send (docs/api.md, "Access rules"). Entries are kept here; the SMTP
 * server and the send path read the entries that apply (`store.accessRules.applying`) and decide
 * with rules.ts.
 */
import type { App } from "../app";
import { iso } from "../clock";
import { conflict, invalid, notFound } from "../errors";
import { newId } from "../ids";
import { withTotal, type Listing, type Page } from "../page";
import { resource } from "../present";
import type { AccessRuleRecord, Aggregates, InboxRecord } from "../store";
import { decide, normalizeRuleValue, ruleValueKind, type AccessAction, type AccessDirection, type AccessEntry } from "./rules";

/** Entries an organization may keep, its inboxes' included: each receive and send looks them up. */
export const maxAccessRules = 1000;

export const presentAccessRule = (row: AccessRuleRecord) =>
  resource({
    id: row.id,
    organizationId: row.organizationId,
    inboxId: row.inboxId,
    direction: row.direction,
    action: row.action,
    value: row.value,
    kind: ruleValueKind(row.value),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  });

export type AccessRule = ReturnType<typeof presentAccessRule>;

export interface NewAccessRule {
  direction: AccessDirection;
  action: AccessAction;
  value: string;
  inboxId?: string;
}

/** 409 when the same entry exists (same scope, direction, action and value, after normalizing). */
export async function createAccessRule(app: App, organizationId: string, input: NewAccessRule): Promise<AccessRule> {
  const normalized = normalizeRuleValue(input.value);
  if (!normalized) throw invalid("value: must be an email address (name@example.com) or a domain name (example.com)");
  const now = app.clock.now();
  const row: AccessRuleRecord = {
    id: newId("acr"),
    organizationId,
    inboxId: input.inboxId ?? null,
    direction: input.direction,
    action: input.action,
    value: normalized.value,
    createdAt: now,
    updatedAt: now,
  };
  await app.store.transaction(async (tx) => {
    if (row.inboxId !== null && !(await tx.inboxes.find(organizationId, row.inboxId))) throw invalid("inboxId: no such inbox in this organization");
    const same = await tx.accessRules.findSame(row);
    if (same) throw conflict(`Access rule already exists: ${same.id}`);
    if ((await tx.accessRules.count(organizationId, {})) >= maxAccessRules) throw invalid(`An organization may have at most ${maxAccessRules} access rules: delete some first`);
    await tx.accessRules.insert(row);
  });
  return presentAccessRule(row);
}

export interface AccessRuleQuery extends Page {
  direction?: AccessDirection;
  action?: AccessAction;
  /** Only the entries of this inbox; "" for the organization-wide ones only. */
  inboxId?: string;
}

export async function listAccessRules(app: App, organizationId: string, query: AccessRuleQuery): Promise<Listing<AccessRule>> {
  const filter = { direction: query.direction, action: query.action, inboxId: query.inboxId === "" ? null : query.inboxId };
  // As the other lists filtered by an inbox: another organization's, or none, is 404, not an empty list.
  if (filter.inboxId && !(await app.store.inboxes.find(organizationId, filter.inboxId))) throw notFound("Inbox not found");
  const rows = await app.store.accessRules.list(organizationId, filter, query.page, query.per);
  return withTotal(query, rows.map(presentAccessRule), () => app.store.accessRules.count(organizationId, filter));
}

export async function getAccessRule(app: App, organizationId: string, id: string): Promise<AccessRule> {
  const row = await app.store.accessRules.find(organizationId, id);
  if (!row) throw notFound("Access rule not found");
  return presentAccessRule(row);
}

/** Returns the deleted entry. */
export function deleteAccessRule(app: App, organizationId: string, id: string): Promise<AccessRule> {
  return app.store.transaction(async (tx) => {
    const row = await tx.accessRules.find(organizationId, id);
    if (!row) throw notFound("Access rule not found");
    await tx.accessRules.delete(organizationId, id);
    return presentAccessRule(row);
  });
}

/**
 * Why an inbox of this server does not take a message from `sender`, another inbox, by its receive
 * rules: the refusal its SMTP server would answer, as the sent message's delivery shows it.
 */
export async function localReceiveRefusal(store: Aggregates, inbox: InboxRecord, sender: string, recipient: string): Promise<string | undefined> {
  const decision = decide(await store.accessRules.applying(inbox.organizationId, inbox.id, "receive"), [sender]);
  return decision.pass ? undefined : `rejected: ${recipient}: 550 5.7.1 The recipient does not accept mail from this sender`;
}

/**
 * Why a send from the inbox does not go to `recipient`, as its delivery's lastResponse shows it
 * (as a suppression's does); undefined when the send rules let it through.
 */
export function sendRefusal(entries: readonly AccessEntry[], recipient: string): string | undefined {
  const decision = decide(entries, [recipient]);
  if (decision.pass) return undefined;
  if ("blockedBy" in decision) {
    const rule = decision.blockedBy;
    return `rejected: ${recipient} is blocked by the send rule ${rule.id} (block ${rule.value}); DELETE /v1/access-rules/${rule.id} to send to it`;
  }
  return `rejected: ${recipient} is on no send allow list of this inbox or its organization (GET /v1/access-rules?direction=send&action=allow)`;
}
