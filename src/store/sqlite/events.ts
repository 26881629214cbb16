/** The events table: written in the caller's transaction, read by the webhook queue. */
import { sql } from "drizzle-orm";
import { events } from "./schema/index";
import type { EventName } from "../../events/names";
import { newId } from "../../ids";
import type { Db } from "./db";
import { storedPayload } from "./event-payload";

export interface NewEvent {
  organizationId: string;
  type: EventName;
  inboxId?: string;
  messageId?: string;
  payload: object;
}

export const eventsStore = (db: Db) => {
  // Prepared once: every send, receipt and delivery outcome emits one.
  const insert = db
    .insert(events)
    .values({
      id: sql.placeholder("id"),
      organizationId: sql.placeholder("organizationId"),
      type: sql.placeholder("type"),
      inboxId: sql.placeholder("inboxId"),
      messageId: sql.placeholder("messageId"),
      payload: sql.placeholder("payload"),
      createdAt: sql.placeholder("createdAt"),
    })
    .prepare();
  return {
    /** Call inside the transaction of the change the event reports, so the two commit together. */
    emit(event: NewEvent, now: number): string {
      const id = newId("evt");
      insert.run({ id, organizationId: event.organizationId, type: event.type, inboxId: event.inboxId ?? null, messageId: event.messageId ?? null, payload: storedPayload(event.payload), createdAt: now });
      return id;
    },
  };
};
