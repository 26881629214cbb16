/**
 * The ACME renewal loop (with INBOXD_ACME_EMAIL): obtains a certificate for each name of
 * names.ts that has none, renews each at two thirds of its lifetime, and backs off after a
 * failure while the previous certificate (or the self-signed one) keeps serving. Due times live
 * in the database and come from the App's clock; a short poll finds what is due, and picks up
 * certificates other nodes renewed.
 */
import type { App } from "../app";
import { iso } from "../clock";
import { runEvery, type RunningPart, type Stopping } from "../running-part";
import { certificateNames } from "./names";
import type { ServedCertificates } from "./served";

const POLL_INTERVAL_MS = 1000;
/** A try under way holds its name this long: a crash mid-try is retried after it. */
const ATTEMPT_HOLD_MS = 10 * 60_000;
/** After the first failure, then doubling up to the cap (Let's Encrypt allows 5 failed validations per name and hour). */
const FIRST_BACKOFF_MS = 10 * 60_000;
const MAX_BACKOFF_MS = 12 * 60 * 60_000;

/** Renewal at two thirds of the lifetime, as Let's Encrypt advises: a month left of 90 days. */
export const renewalTime = (notBefore: number, notAfter: number) => notBefore + Math.floor(((notAfter - notBefore) * 2) / 3);
export const backoff = (failures: number) => Math.min(FIRST_BACKOFF_MS * 2 ** (failures - 1), MAX_BACKOFF_MS);

export function startCertificateRenewal(app: App, served: ServedCertificates): RunningPart {
  async function renewDue(stopping: Stopping) {
    const names = await certificateNames(app);
    await app.store.certificates.want(names, app.clock.now());
    // A custom domain deleted or no longer receiving, a host name changed: its certificate serves until it expires, then goes.
    const forgotten = await app.store.certificates.forgetUnwanted(names, app.clock.now());
    if (forgotten.length) app.log.info("certificates no longer wanted removed", { names: forgotten.join(",") });
    for (const row of await app.store.certificates.due(app.clock.now())) {
      if (stopping()) return;
      if (!names.includes(row.name.toLowerCase())) continue;
      const started = app.clock.now();
      // Another node's renewal may have claimed this try since `due` read it: one try at a time.
      if (!(await app.store.certificates.postpone(row.name, started, started + ATTEMPT_HOLD_MS))) continue;
      try {
        // A name not published yet (a custom domain's mta-sts host without its CNAME) fails here, not at the CA, whose failed validations are rate-limited.
        if ((await app.resolver.lookupHostAddresses(row.name)).length === 0) throw new Error(`${row.name} has no A/AAAA record: publish it (or a CNAME to the mail host) first`);
        // acme-client and its X.509 and HTTP libraries load with the first issuance: about 5 MB of
        // resident memory that a server whose certificates last it for months does not hold idle.
        const { issueCertificate } = await import("./acme");
        const issued = await issueCertificate(app, row.name);
        const nextAttemptAt = renewalTime(issued.notBefore, issued.notAfter);
        await app.store.certificates.recordIssued(row.name, { ...issued, nextAttemptAt }, app.clock.now());
        app.log.info(row.certificatePem ? "certificate renewed" : "certificate issued", { name: row.name, notAfter: iso(issued.notAfter), renewAt: iso(nextAttemptAt) });
      } catch (error) {
        const failures = row.failures + 1;
        const nextAttemptAt = app.clock.now() + backoff(failures);
        const lastError = (error as Error).message || String(error);
        await app.store.certificates.recordFailure(row.name, { failures, lastError, nextAttemptAt }, app.clock.now());
        app.log.warn("certificate not obtained", {
          name: row.name,
          error: lastError,
          failures,
          retryAt: iso(nextAttemptAt),
          serving: row.notAfter ? `the previous certificate, valid until ${iso(row.notAfter)}` : "the self-signed or INBOXD_TLS_CERT certificate",
        });
      }
      await served.refresh(app);
    }
    await served.refresh(app);
  }

  // An issuance cut short by a stop is due again after ATTEMPT_HOLD_MS.
  return runEvery("certificates", POLL_INTERVAL_MS, renewDue, { log: app.log, event: "certificate renewal failed" }, { stopWaitMs: () => app.shutdown.remainingMs() });
}
