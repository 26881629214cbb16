/**
 * The certificates this node serves now: those in the database (its own issuances and other
 * nodes'), else the operator's or the self-signed one. Listeners subscribe and take a renewed
 * certificate for their next connections, without a restart.
 */
import type { App } from "../app";
import type { PemCertificate } from "../smtp/self-signed";
import { loadTlsCertificate } from "../smtp/tls";

export type NamedCertificate = PemCertificate & { name: string };

export class ServedCertificates {
  private byName = new Map<string, PemCertificate>();
  private version = "";
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly fallback: PemCertificate,
    private readonly mailHost: string,
  ) {}

  /** For clients that name no host, and for SMTP: the mail host's certificate. */
  get primary(): PemCertificate {
    return this.byName.get(this.mailHost.toLowerCase()) ?? this.fallback;
  }

  /** Every issued certificate, the mail host's first (Bun.serve takes the first as its default). */
  get named(): NamedCertificate[] {
    const entries = [...this.byName].map(([name, pair]) => ({ name, ...pair }));
    return entries.sort((a, b) => Number(b.name === this.mailHost.toLowerCase()) - Number(a.name === this.mailHost.toLowerCase()));
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads the database's certificates when any changed since the last look; tells the listeners. */
  async refresh(app: App): Promise<void> {
    const versions = await app.store.certificates.versions();
    const version = JSON.stringify(versions);
    if (version === this.version) return;
    this.version = version;
    const next = new Map<string, PemCertificate>();
    for (const row of await app.store.certificates.list()) {
      if (row.certificatePem && row.privateKeyPem) next.set(row.name.toLowerCase(), { cert: row.certificatePem, key: row.privateKeyPem });
    }
    const changed = next.size !== this.byName.size || [...next].some(([name, pair]) => this.byName.get(name)?.cert !== pair.cert);
    this.byName = next;
    if (!changed) return;
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (error) {
        app.log.error("a listener could not take the new certificates", { error });
      }
    }
  }
}

/** At start: the database's certificates over the operator's or the self-signed one. */
export async function servedCertificates(app: App): Promise<ServedCertificates> {
  const served = new ServedCertificates(loadTlsCertificate(app), app.config.hostname);
  await served.refresh(app);
  return served;
}
