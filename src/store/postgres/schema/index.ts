/** The PostgreSQL engine's drizzle schema, one file per table group; each mirrors migrations/postgres/. */
export * from "./accounts";
export * from "./mail";
export * from "./drafts";
export * from "./accepted-inbound";
export * from "./certificates";
export * from "./deliveries";
export * from "./dkim-keys";
export * from "./domains";
export * from "./mta-sts-policies";
export * from "./nodes";
export * from "./suppressions";
export * from "./tls-reports";
export * from "./webhooks";
