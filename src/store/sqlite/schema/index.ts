/** The drizzle schema, one file per table group; each mirrors its SQL migration (a test checks they agree). */
export * from "./accounts";
export * from "./mail";
export * from "./queues";
export * from "./keys";
export * from "./search";
export * from "./domains";
export * from "./webhooks";
export * from "./outbound";
export * from "./inbound";
export * from "./certificates";
export * from "./access";
export * from "./drafts";
export * from "./idempotency";
