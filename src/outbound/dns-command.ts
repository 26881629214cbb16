/** `inboxd dns`: the zone-file lines the service's own mail domain needs, from the data dir. */
import { openApp } from "../app";
import type { Config } from "../config";
import { openStoreReadOnly, StoreInUseError } from "../store";
import { ensureServiceDkimKeys, serviceDomainRecords, zoneFileLines } from "./service-domain";

/**
 * Makes the service domain's keys first when this data dir has none yet, so the records can be
 * published before the first start. An installation that has them (a server runs on it, or ran)
 * is read without the lock, read-only, and never migrated: a newer version's migrations would
 * keep the version still running there (several nodes on PostgreSQL) from starting again.
 */
export async function serviceDnsZone(config: Config): Promise<{ zone: string; keysMadeNow: boolean }> {
  const zone = await zoneOfKeysMade(config);
  if (zone !== undefined) return { zone, keysMadeNow: false };
  let app;
  try {
    app = await openApp(config);
  } catch (error) {
    if (!(error instanceof StoreInUseError)) throw error;
    const store = (await openStoreReadOnly(config))!;
    try {
      return { zone: zoneFileLines(config, await serviceDomainRecords(config, store)), keysMadeNow: false };
    } finally {
      store.close();
    }
  }
  try {
    const keysMadeNow = await ensureServiceDkimKeys(app);
    return { zone: zoneFileLines(config, await serviceDomainRecords(config, app.store)), keysMadeNow };
  } finally {
    app.close();
  }
}

/** The zone from the database read-only, when it holds the service domain's keys; undefined when there is none yet, or no keys. */
async function zoneOfKeysMade(config: Config): Promise<string | undefined> {
  const store = await openStoreReadOnly(config).catch(() => undefined);
  if (!store) return undefined;
  try {
    // A PostgreSQL database no inboxd has migrated yet has no tables: the first start's path.
    const keys = await store.dkimKeys.forDomain(config.mailDomain.toLowerCase()).catch(() => []);
    return keys.length === 0 ? undefined : zoneFileLines(config, await serviceDomainRecords(config, store));
  } finally {
    store.close();
  }
}
