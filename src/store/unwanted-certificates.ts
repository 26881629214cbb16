import { and, isNotNull, isNull, like, lte, notInArray, or, type Column } from "drizzle-orm";

/** The certificate rows forgetUnwanted removes (CertificatesStore), for either engine's table. */
export const unwantedAt = (table: { name: Column; notAfter: Column; certificatePem: Column }, wanted: string[], now: number) =>
  and(notInArray(table.name, wanted), or(and(isNotNull(table.notAfter), lte(table.notAfter, now)), and(isNull(table.certificatePem), like(table.name, "mta-sts.%"))));
