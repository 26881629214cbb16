// Several nodes on one PostgreSQL database: two stores (two nodes, each with its own pool, clock
// and lease holder) claim from the same queues at once and never get the same row (FOR UPDATE
// SKIP LOCKED); one of them "dies" holding claims, and the other takes them over once the leases
// run out, and not before; a node that outlived its lease cannot store a message twice; a commit
// that queues work wakes the other nodes.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { Clock } from "../../src/clock";
import { createLogger } from "../../src/log";
import { newId } from "../../src/ids";
import { connect } from "../../src/store/postgres/connection";
import { drizzleOn } from "../../src/store/postgres/db";
import { createPostgresStore } from "../../src/store/postgres/index";
import { LEASE_MS, leasesOf, nodeName, releaseEarlierRuns, renewLeases, type Leases } from "../../src/store/postgres/leases";
import { migrate } from "../../src/store/postgres/migrate";
import { SECRET_KEY_BYTES, secretBox } from "../../src/store/secret-box";
import type { InboundEnvelope, Store } from "../../src/store/store";
import { eventually } from "../harness";
import { postgresMissing, testPostgres } from "../peers/postgres";

interface Node {
  store: Store;
  clock: Clock;
  client: ReturnType<typeof connect>;
  leases: Leases;
  close(): Promise<void>;
}

const envelope = (n: number): InboundEnvelope => ({
  transaction: `t${n}`,
  clientIp: "127.0.0.1",
  helo: "client.test",
  mailFrom: "sender@client.test",
  protocol: "ESMTP",
  receivedAt: 0,
  recipients: [],
});

/** Claims what `due` finds (as the inbound queue's turn does), holding the transaction open until `hold` settles. */
async function claimInbound(node: Node, limit: number, hold: Promise<unknown> = Promise.resolve()) {
  return node.store.transaction(async (tx) => {
    const ids: number[] = [];
    for (const { id } of await tx.acceptedInbound.due(node.clock.now(), { ids: [], peers: [] }, limit)) {
      if (await tx.acceptedInbound.claim(id, 0)) ids.push(id);
    }
    await hold;
    return ids;
  });
}

describe.skipIf(postgresMissing !== undefined && !process.env.INBOXD_TEST_DATABASE_URL)("queue claims shared by two nodes (PostgreSQL)", () => {
  let postgres: Awaited<ReturnType<typeof testPostgres>>;
  let url: string;
  const nodes: Node[] = [];
  // Every node of one database holds the same key.
  const secrets = secretBox(randomBytes(SECRET_KEY_BYTES));

  /** A node on the database; `restart`: as a node starts (its earlier runs' claims freed), for a node of that name. */
  async function startNode(options: { node?: string; clock?: Clock; restart?: boolean } = {}): Promise<Node> {
    const client = connect(url);
    const clock = options.clock ?? new Clock();
    await migrate(client, clock.now());
    const leases = leasesOf(clock, options.node);
    if (options.restart) await releaseEarlierRuns(drizzleOn(client), leases, clock.now());
    const node = { store: createPostgresStore(client, { leases, secrets }), clock, client, leases, close: () => client.close() };
    nodes.push(node);
    return node;
  }

  beforeAll(async () => {
    postgres = await testPostgres();
    url = await postgres.createDatabase("inboxd_leases");
  });

  // Each node holds a pool of its own: closed after each test.
  afterEach(async () => {
    for (const node of nodes.splice(0)) await node.close();
  });

  afterAll(() => postgres?.close());

  test("two nodes claiming at once split the due rows; a dead node's claims are taken over after its lease", async () => {
    const a = await startNode();
    const b = await startNode();
    const now = a.clock.now();
    for (let n = 0; n < 20; n++) await a.store.acceptedInbound.accept(envelope(n), "192.0.2.1", { bytes: Buffer.from(`message ${n}`), blobId: null }, 9, now);

    // A holds its transaction (and the locks of its ten rows) open while B claims: B neither waits nor gets them.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const claimedByA = claimInbound(a, 10, held);
    await Bun.sleep(200);
    const claimedByB = await claimInbound(b, 20);
    release();
    const aIds = await claimedByA;
    expect(aIds).toHaveLength(10);
    expect(claimedByB).toHaveLength(10);
    expect(new Set([...aIds, ...claimedByB]).size).toBe(20);

    // B finishes its rows; A "dies" holding its ten claims (no outcome, no release, no renewal).
    for (const id of claimedByB) await b.store.transaction((tx) => tx.acceptedInbound.finish(id));
    expect((await b.store.acceptedInbound.backlog()).depth).toBe(10);

    // Before A's leases run out nothing is due for B; after, B takes every one of them over.
    b.clock.advance(LEASE_MS - 1_000);
    expect(await claimInbound(b, 20)).toEqual([]);
    b.clock.advance(2_000);
    const takenOver = await claimInbound(b, 20);
    expect(takenOver.sort()).toEqual([...aIds].sort());
    const retried = await b.store.acceptedInbound.claim(takenOver[0]!, 0);
    expect(retried?.attempts).toBe(3); // A's try and B's takeover were both counted, and this claim

    // A comes back to life and stores a message B has stored since: its copies roll back (the row is gone).
    await b.store.transaction((tx) => tx.acceptedInbound.finish(takenOver[0]!));
    await expect(a.store.transaction((tx) => tx.acceptedInbound.finish(takenOver[0]!))).rejects.toThrow(/stored by another node/);
  });

  test("a live node's renewed leases are not taken over", async () => {
    const a = await startNode();
    const b = await startNode();
    const now = a.clock.now();
    for (let n = 0; n < 3; n++) await a.store.acceptedInbound.accept(envelope(n), "192.0.2.1", { bytes: Buffer.from(`renewed ${n}`), blobId: null }, 9, now);
    const aIds = await claimInbound(a, 100);
    expect(aIds.length).toBeGreaterThanOrEqual(3);

    // A's clock and B's move on together; A renews as its timer would (every third of a lease).
    for (let step = 0; step < 3; step++) {
      a.clock.advance(LEASE_MS / 2);
      b.clock.advance(LEASE_MS / 2);
      await renewAs(a, aIds);
      expect(await claimInbound(b, 100)).toEqual([]);
    }
  });

  test("webhook deliveries: two nodes claim disjoint sets, and the tries of a dead node are closed when its deliveries are taken over", async () => {
    const a = await startNode();
    const b = await startNode();
    const now = a.clock.now();
    const organization = await a.store.accounts.createOrganization({ id: newId("org"), name: "Leases" }, now);
    await a.store.webhooks.insert({
      id: newId("whk"),
      organizationId: organization.id,
      url: "http://127.0.0.1:9/hook",
      events: ["message.received"],
      secret: "whsec_test",
      enabled: true,
      disabledReason: null,
      firstFailureAt: null,
      createdAt: now,
      updatedAt: now,
    });
    for (let n = 0; n < 6; n++) await a.store.events.emit({ organizationId: organization.id, type: "message.received", payload: { n } }, now);

    const claimWebhooks = (node: Node, limit: number, hold: Promise<unknown> = Promise.resolve(), inFlight: number[] = []) =>
      node.store.transaction(async (tx) => {
        const due = await tx.webhookQueue.due(node.clock.now(), { urls: [], deliveryIds: inFlight, organizationIds: [] }, limit);
        const at = node.clock.now();
        await tx.webhookQueue.recordAttempts(
          due.map((d) => ({ id: newId("wha"), webhookId: d.webhookId, deliveryId: d.deliveryId, event: d.type, url: d.url, organizationId: d.organizationId, attemptNumber: d.attempts + 1, dueAt: d.dueAt, createdAt: at, retryAt: at + 1_000 })),
        );
        await hold;
        return due.map((d) => d.deliveryId);
      });

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const claimedByA = claimWebhooks(a, 3, held);
    await Bun.sleep(200);
    const claimedByB = await claimWebhooks(b, 10);
    release();
    const aIds = await claimedByA;
    expect(aIds).toHaveLength(3);
    expect(claimedByB).toHaveLength(3);
    expect(new Set([...aIds, ...claimedByB]).size).toBe(6);

    // A dies mid-try. After its lease, B (whose own tries are still in flight) takes A's deliveries over, and A's unfinished tries are closed.
    b.clock.advance(LEASE_MS + 1_000);
    const takenOver = await claimWebhooks(b, 10, undefined, claimedByB);
    expect(takenOver.sort()).toEqual([...aIds].sort());
    const webhookId = (await a.store.webhooks.list(organization.id, 1, 10))[0]!.id;
    const attempts = await b.store.webhooks.listAttempts(webhookId, 1, 50);
    const ofA = attempts.filter((a) => aIds.includes(a.attempt.deliveryId) && a.attempt.attemptNumber === 1);
    expect(ofA).toHaveLength(3);
    for (const { attempt } of ofA) expect(attempt.finishedAt).not.toBeNull();
  });

  test("a restarted node takes back what its earlier run claimed at once; another node's claims stay with it, also on a machine of the same name and data dir", async () => {
    const clock = new Clock();
    // Two nodes told apart by INBOXD_HOSTNAME alone, as on cloned machines with the documented data dir.
    const name = (hostname: string) => nodeName({ hostname, dataDir: "/var/lib/inboxd" });
    expect(name("mx1.example.com")).not.toBe(name("mx2.example.com"));
    expect(name("mx1.example.com")).toBe(name("mx1.example.com"));
    const [first, other] = [await startNode({ node: name("mx1.example.com"), clock }), await startNode({ node: name("mx2.example.com"), clock })];
    const now = clock.now();
    for (let n = 0; n < 4; n++) await first.store.acceptedInbound.accept(envelope(n), "192.0.2.1", { bytes: Buffer.from(`restart ${n}`), blobId: null }, 10, now);
    const byFirst = await claimInbound(first, 2);
    const byOther = await claimInbound(other, 2);
    expect(byFirst).toHaveLength(2);
    expect(byOther).toHaveLength(2);
    // The first node "crashes" and starts again (same host and data dir, a new run), while the other lives on.
    const restarted = await startNode({ node: name("mx1.example.com"), clock, restart: true });
    expect((await claimInbound(restarted, 10)).sort()).toEqual([...byFirst].sort());
  });

  test("a starting node forgets the idempotency keys its earlier run left running, never those of a live node", async () => {
    const clock = new Clock();
    const [first, other] = [await startNode({ node: "host:/var/lib/one", clock }), await startNode({ node: "host:/var/lib/two", clock })];
    const now = clock.now();
    const organizationId = newId("org");
    await first.store.accounts.createOrganization({ id: organizationId, name: "Keys" }, now);
    const key = (name: string) => ({ organizationId, key: name, fingerprint: "f", statusCode: null, responseBody: null, blobId: null, createdAt: now, expiresAt: now + 86_400_000, inboxId: null });
    expect(await first.store.idempotencyKeys.begin(key("of-the-crashed-run"), now)).toBeUndefined();
    expect(await other.store.idempotencyKeys.begin(key("of-the-live-node"), now)).toBeUndefined();
    clock.advance(1_000);
    const restarted = await startNode({ node: "host:/var/lib/one", clock, restart: true });
    expect(await restarted.store.idempotencyKeys.releaseUnfinished(clock.now())).toBe(1);
    expect(await restarted.store.idempotencyKeys.begin(key("of-the-crashed-run"), clock.now())).toBeUndefined();
    expect((await restarted.store.idempotencyKeys.begin(key("of-the-live-node"), clock.now()))?.statusCode).toBeNull();
  });

  test("an idempotency key whose request's node died is taken over by a retry on another node once its lease ran out; a live node's stays its own", async () => {
    const clock = new Clock();
    const [dead, live, other] = [await startNode({ clock }), await startNode({ clock }), await startNode({ clock })];
    const now = clock.now();
    const organizationId = newId("org");
    await dead.store.accounts.createOrganization({ id: organizationId, name: "Keys" }, now);
    const key = (name: string) => ({ organizationId, key: name, fingerprint: "f", statusCode: null, responseBody: null, blobId: null, createdAt: clock.now(), expiresAt: now + 86_400_000, inboxId: null });
    expect(await dead.store.idempotencyKeys.begin(key("of-the-dead-node"), now)).toBeUndefined();
    expect(await live.store.idempotencyKeys.begin(key("of-the-live-node"), now)).toBeUndefined();
    // Within the lease both are in progress (409 to the retry).
    expect((await other.store.idempotencyKeys.begin(key("of-the-dead-node"), now))?.statusCode).toBeNull();
    // Past it: the live node renewed its lease, the dead one did not.
    clock.advance(LEASE_MS - 1_000);
    await renewLeases(drizzleOn(live.client), live.leases);
    clock.advance(2_000);
    expect(await other.store.idempotencyKeys.begin(key("of-the-dead-node"), clock.now())).toBeUndefined();
    expect((await other.store.idempotencyKeys.begin(key("of-the-live-node"), clock.now()))?.statusCode).toBeNull();
    // Taken over, the key is the retry's: a third try is told it is in progress, and its completion stands.
    await other.store.idempotencyKeys.complete(organizationId, "of-the-dead-node", 201, { bytes: Buffer.from("{}"), blobId: null });
    expect((await live.store.idempotencyKeys.begin(key("of-the-dead-node"), clock.now()))?.statusCode).toBe(201);
  });

  test("a certificate's try is claimed by one node only", async () => {
    const a = await startNode();
    const b = await startNode();
    const now = a.clock.now();
    await a.store.certificates.want(["mx.leases.test"], now);
    const claims = await Promise.all([a.store.certificates.postpone("mx.leases.test", now, now + 600_000), b.store.certificates.postpone("MX.leases.test", now, now + 600_000)]);
    expect(claims.sort()).toEqual([false, true]);
    expect(await b.store.certificates.due(now + 1_000)).toEqual([]);
  });

  test("a commit that queues work wakes the other nodes' queues (LISTEN/NOTIFY), once per transaction and queue, and not before the commit", async () => {
    const woken: string[] = [];
    const listener = createPostgresStore(connect(url), { onWake: (what) => woken.push(what), secrets });
    const maintenance = await listener.startMaintenance(createLogger("text", "silent"));
    try {
      const sender = await startNode();
      await Bun.sleep(300); // the LISTEN is acknowledged
      const now = sender.clock.now();
      let commit!: () => void;
      const committed = new Promise<void>((resolve) => (commit = resolve));
      const accepting = sender.store.transaction(async (tx) => {
        for (let n = 0; n < 3; n++) await tx.acceptedInbound.accept(envelope(n), "192.0.2.1", { bytes: Buffer.from(`woken ${n}`), blobId: null }, 8, now);
        await committed;
      });
      await Bun.sleep(300);
      expect(woken).toEqual([]);
      commit();
      await accepting;
      await eventually("the wake-up", async () => woken, (w) => w.length > 0, 5_000);
      await Bun.sleep(200);
      expect(woken).toEqual(["inbound"]);
    } finally {
      await maintenance.stop();
      listener.close();
    }
  });

  /** Renews the leases `node` holds on `ids`: what its renewal timer does, through a holder read from the rows. */
  async function renewAs(node: Node, ids: number[]) {
    const client = connect(url);
    try {
      const [{ holder }] = (await client.unsafe("SELECT claimed_by AS holder FROM accepted_inbound WHERE id = $1", [ids[0]])) as { holder: string }[];
      await renewLeases(drizzleOn(client), { holder, until: () => node.clock.now() + LEASE_MS });
    } finally {
      await client.close();
    }
  }
});
