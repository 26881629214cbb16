/** `inboxd dns`: the zone-file lines the service's own mail domain needs, from the data dir. */
import { openApp } from "../app";
import type { Config } from "../config";
import { openStoreReadOnly, StoreInUseError } from "../store";
import { ensureServiceDkimKeys, serviceDomainRecords, zoneFileLines } from "./service-domain";

/**
 * Makes the service domain's keys first when this data dir has none yet, so the records can be
 * published before the first start. While inboxd runs (it holds the data dir's lock, and made the
 * keys when it started), the keys are read from the database without the lock, read-only.
 */
export async function serviceDnsZone(config: Config): Promise<{ zone: string; keysMadeNow: boolean }> {
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
