/** `inboxd dns`: the zone-file lines the service's own mail domain needs, from the data dir. */
import { openApp } from "../app";
import type { Config } from "../config";
import { DataDirLockedError } from "../store/sqlite/open";
import { openDatabaseReadOnly } from "../store/sqlite/read-only";
import { createStore } from "../store/sqlite/index";
import { ensureServiceDkimKeys, serviceDomainRecords, zoneFileLines } from "./service-domain";

/**
 * Makes the service domain's keys first when this data dir has none yet, so the records can be
 * published before the first start. While inboxd runs (it holds the data dir's lock, and made the
 * keys when it started), the keys are read from the database without the lock, read-only.
 */
export async function serviceDnsZone(config: Config): Promise<{ zone: string; keysMadeNow: boolean }> {
  let app;
  try {
    app = openApp(config);
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    const sqlite = openDatabaseReadOnly(config.dataDir)!;
    try {
      return { zone: zoneFileLines(config, serviceDomainRecords(config, createStore(sqlite))), keysMadeNow: false };
    } finally {
      sqlite.close();
    }
  }
  try {
    const keysMadeNow = await ensureServiceDkimKeys(app);
    return { zone: zoneFileLines(config, serviceDomainRecords(config, app.store)), keysMadeNow };
  } finally {
    app.close();
  }
}
