/** `inboxd dns`: the zone-file lines the service's own mail domain needs, from the data dir. */
import { openApp } from "../app";
import type { Config } from "../config";
import { DataDirLockedError } from "../db/open";
import { openDatabaseReadOnly } from "../db/read-only";
import { createStore } from "../store";
import { ensureServiceDkimKeys, serviceDomainRecords, zoneFileLines } from "./service-domain";

/**
 * Makes the service domain's keys first when this data dir has none yet, so the records can be
 * published before the first start. While inboxd runs (it holds the data dir's lock, and made the
 * keys when it started), the keys are read from the database without the lock, read-only.
 */
export async function serviceDnsZone(config: Config): Promise<string> {
  let app;
  try {
    app = openApp(config);
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    const sqlite = openDatabaseReadOnly(config.dataDir)!;
    try {
      return zoneFileLines(config, serviceDomainRecords(config, createStore(sqlite)));
    } finally {
      sqlite.close();
    }
  }
  try {
    const made = await ensureServiceDkimKeys(app);
    const note = made ? `; the DKIM keys did not exist yet: made now in ${config.dataDir}; inboxd serve signs with them once these records are published\n` : "";
    return note + zoneFileLines(config, serviceDomainRecords(config, app.store));
  } finally {
    app.close();
  }
}
