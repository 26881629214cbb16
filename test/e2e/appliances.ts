/**
 * Two inboxd appliances that mail each other as two companies' servers would: alpha.test and
 * beta.test, each the compiled executable with its own data dir, host name and SMTP port, one DNS
 * server on loopback holding both domains' records exactly as `inboxd dns` prints them, and one
 * webhook receiver each. Only the network names are simulated: every message crosses real SMTP
 * between the two processes (INBOXD_OUTBOUND_PORT of each is the other's SMTP port).
 */
import { expect } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { eventNames } from "../../src/events/names";
import { openStoreReadOnly } from "../../src/store/index";
import { register, repoRoot, startChildServer, tempDir, testEnv, type ApiClient, type ApiResponse, type ChildServer, type Registered } from "../harness";
import { startDnsServer, type DnsServer } from "../peers/dns-server";
import { freePort } from "../peers/ports";
import { startWebhookReceiver, type WebhookReceiver } from "../peers/webhook-receiver";

export const binaryPath = join(repoRoot, "dist/inboxd");
export const binaryMissing = existsSync(binaryPath) ? undefined : "dist/inboxd is not built (bun run build)";

/** Both appliances answer on loopback, and say so in DNS (A records, SPF ip4:). */
const address = "127.0.0.1";

/** SMTP connections one appliance opens to the other at once, each with one message in flight. */
const deliveryLanesPerDomain = 4;

/**
 * Settings that shorten what a test cannot wait for; the rest are the production defaults
 * (the 100 ms greeting delay included: real senders wait for the greeting).
 */
const settings = {
  INBOXD_PUBLIC_IPS: address,
  INBOXD_SMTP_GREETING_DELAY_MS: "100",
  // About 20 s of retries in all: longer than a restart takes, shorter than the test's patience.
  INBOXD_DELIVERY_RETRY_DELAYS: "1,1,2,2,4,10",
  // 6 s for a greeting, 12 s for a reply: generous on loopback, short enough to fail a test.
  INBOXD_SMTP_CLIENT_TIMEOUT_SCALE: "0.02",
  INBOXD_WEBHOOK_RETRY_DELAYS: "1,1,1,1",
  INBOXD_SEND_LIMIT: "1000",
  INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN: String(deliveryLanesPerDomain),
};

/** A webhook envelope as inboxd posts it: both documented shapes at once. */
export interface WebhookEvent {
  id: string;
  event: string;
  messageId?: string;
  inboxId?: string;
  data: any;
  payload: any;
}

export class Appliance {
  readonly domain: string;
  readonly hostname: string;
  readonly dataDir = tempDir("inboxd-e2e");
  /** The webhook receiver its organization's webhook posts to. */
  readonly hooks = startWebhookReceiver();
  env: Record<string, string> = {};
  /** `inboxd dns` output for this data dir, as published in the DNS server. */
  zone = "";
  smtpPort = 0;
  account!: Registered;
  private child?: ChildServer;

  constructor(readonly name: string) {
    this.domain = `${name}.test`;
    this.hostname = `mx.${name}.test`;
  }

  get api(): ApiClient {
    if (!this.child) throw new Error(`${this.name} is not running`);
    return this.child.api;
  }

  get apiKey(): string {
    return this.account.apiKey.key;
  }

  /** Its settings, the same for every run: INBOXD_OUTBOUND_PORT is the peer's SMTP port, known before either starts. */
  configure(dns: DnsServer, smtpPort: number, peerSmtpPort: number): void {
    this.smtpPort = smtpPort;
    this.env = testEnv(this.dataDir, {
      ...settings,
      INBOXD_MAIL_DOMAIN: this.domain,
      INBOXD_HOSTNAME: this.hostname,
      INBOXD_SMTP_PORT: String(smtpPort),
      INBOXD_DNS_SERVERS: dns.address,
      INBOXD_OUTBOUND_PORT: String(peerSmtpPort),
    });
  }

  /** Runs `inboxd dns` on the fresh data dir, as an operator does before the first start. */
  async printDnsRecords(): Promise<string> {
    const run = Bun.spawn([binaryPath, "dns"], { env: { ...process.env, ...this.env }, stdout: "pipe", stderr: "pipe" });
    const [stdout, stderr, exitCode] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
    if (exitCode !== 0) throw new Error(`${this.name}: inboxd dns exited with ${exitCode}: ${stderr}`);
    this.zone = stdout;
    return stdout;
  }

  async start(): Promise<void> {
    this.child = await startChildServer(this.env, { command: [binaryPath], cwd: this.dataDir });
  }

  /** kill -9: no shutdown, nothing flushed but what was committed. */
  async kill(): Promise<void> {
    await this.child?.kill("SIGKILL");
    this.child = undefined;
  }

  /** SIGTERM, then the receiver and the data dir go; resolves with the exit code when it was running. */
  async stop(): Promise<number | undefined> {
    const exitCode = await this.child?.kill("SIGTERM");
    this.child = undefined;
    await this.hooks.close();
    rmSync(this.dataDir, { recursive: true, force: true });
    return exitCode;
  }

  /** An API call with this appliance's API key; throws unless the status is `expected`. */
  async call<T = any>(method: string, path: string, body?: unknown, expected = method === "POST" ? 201 : 200): Promise<T> {
    const res: ApiResponse<T> = await this.api.request(method, path, { token: this.apiKey, body });
    if (res.status !== expected) throw new Error(`${this.name}: ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  send(inboxId: string, body: Record<string, unknown>): Promise<any> {
    return this.call("POST", `/v1/inboxes/${inboxId}/messages/send`, body);
  }

  message(inboxId: string, messageId: string): Promise<any> {
    return this.call("GET", `/v1/inboxes/${inboxId}/messages/${messageId}`);
  }

  /** Every message of an inbox (list fields), page by page. */
  async messages(inboxId: string): Promise<any[]> {
    // By id: a message stored while the pages are read (newest first) moves the older ones down a
    // page, and one is read twice; a second stored copy would have an id of its own.
    const all = new Map<string, any>();
    for (let page = 1; ; page++) {
      const batch = await this.call<any[]>("GET", `/v1/inboxes/${inboxId}/messages?per=100&page=${page}`);
      for (const message of batch) all.set(message.id, message);
      if (batch.length < 100) return [...all.values()];
    }
  }

  /** The full message of the inbox with this subject, once it has arrived. */
  async received(inboxId: string, subject: string, timeoutMs = 15_000): Promise<any> {
    const found = await waitFor(`${this.name}: a message "${subject}"`, timeoutMs, async () => (await this.messages(inboxId)).find((message) => message.subject === subject));
    return this.message(inboxId, found.id);
  }

  /** Polls a message until `done` holds for it. */
  messageWhen(inboxId: string, messageId: string, what: string, done: (message: any) => boolean, timeoutMs = 15_000): Promise<any> {
    return waitFor(`${this.name}: message ${messageId} ${what}`, timeoutMs, async () => {
      const message = await this.message(inboxId, messageId);
      return done(message) ? message : undefined;
    });
  }

  /** Webhook deliveries received so far, oldest first. */
  events(): WebhookEvent[] {
    return this.hooks.requests.map((request) => JSON.parse(request.body));
  }

  /** The first webhook delivery of `event` about this message. */
  event(event: string, messageId: string, timeoutMs = 15_000): Promise<WebhookEvent> {
    return waitFor(`${this.name}: webhook ${event} for ${messageId}`, timeoutMs, async () => this.events().find((delivery) => delivery.event === event && delivery.messageId === messageId));
  }

  /**
   * The raw source this appliance stored for a message, read from its database (read-only, beside
   * the running process, as `inboxd dns` reads it). No API route returns a message's source.
   */
  async rawSource(messageId: string): Promise<Buffer> {
    const store = (await openStoreReadOnly({ dataDir: this.dataDir, databaseUrl: this.env.INBOXD_DATABASE_URL || undefined }))!;
    try {
      const raw = await store.messages.rawSource(messageId);
      if (!raw) throw new Error(`${this.name}: no source for ${messageId}`);
      return Buffer.from(raw);
    } finally {
      store.close();
    }
  }
}

export interface Appliances {
  dns: DnsServer;
  alpha: Appliance;
  beta: Appliance;
  close(): Promise<void>;
}

/**
 * Two fresh appliances, each with a registered account (initial inbox on its domain) and a webhook
 * for every event to its own receiver, their records published from `inboxd dns`.
 */
export async function startAppliances(): Promise<Appliances> {
  const dns = await startDnsServer();
  const alpha = new Appliance("alpha");
  const beta = new Appliance("beta");
  const appliances = {
    dns,
    alpha,
    beta,
    async close() {
      const exitCodes = await Promise.all([alpha.stop(), beta.stop()]);
      await dns.close();
      expect(exitCodes.filter((code) => code !== undefined && code !== 0), "exit codes after SIGTERM").toEqual([]);
    },
  };
  try {
    for (let attempt = 1; ; attempt++) {
      const [alphaPort, betaPort] = [await freePort(), await freePort()];
      alpha.configure(dns, alphaPort, betaPort);
      beta.configure(dns, betaPort, alphaPort);
      if (attempt === 1) for (const zone of await Promise.all([alpha.printDnsRecords(), beta.printDnsRecords()])) dns.setZoneFile(zone);
      // Both starts settle before a failure is thrown, so that close() finds every child started.
      const failed = (await Promise.allSettled([alpha.start(), beta.start()])).flatMap((start) => (start.status === "rejected" ? [start.reason] : []));
      if (failed.length === 0) break;
      // A port free when chosen can be taken before the child binds it (another test's listener, or
      // an outgoing connection's ephemeral port): new ports, the same data dirs.
      if (attempt === 3 || !failed.every((error) => String(error).includes("is in use by another process"))) throw failed[0];
      await Promise.all([alpha.kill(), beta.kill()]);
    }
    await Promise.all(
      [alpha, beta].map(async (appliance) => {
        appliance.account = await register(appliance.api, { firstName: appliance.name, username: `owner@${appliance.domain}` });
        await appliance.call("POST", "/v1/webhooks", { url: appliance.hooks.url(`/${appliance.name}`), events: eventNames });
      }),
    );
    return appliances;
  } catch (error) {
    // Whatever did start goes, so that a failed set-up leaves no process behind.
    await appliances.close().catch(() => {});
    throw error;
  }
}

/** The d= tag of each DKIM-Signature field of a message, in order (folded lines joined, RFC 5322 §2.2.3). */
export function signingDomains(raw: Buffer): string[] {
  const header = raw.toString("latin1").split("\r\n\r\n", 1)[0].replace(/\r\n[ \t]/g, " ");
  return [...header.matchAll(/^DKIM-Signature:.*?[:;\s]d=([^;\s]+)/gim)].map((match) => match[1]);
}

/** Polls `probe` until it returns a value; throws naming `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(50);
  }
}
