// Mail on a custom domain: inboxes on it once verified, inbound SMTP for it, and outbound
// mail signed with the domain's own keys (d= the domain), checked by independent verifiers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { dkimVerify } from "mailauth";
import { createResolver } from "../../src/dns/resolver";
import { dkimverify, dkimverifyMissing } from "../peers/dkimverify";
import { sendMail } from "../smtp/mail-client";
import { startOutboundWorld, type OutboundWorld } from "../outbound/world";
import { publishRecords, recordOf, type ApiRecord } from "./zone";

let w: OutboundWorld;

beforeAll(async () => {
  w = await startOutboundWorld();
  w.mx("remote.test");
  // This server's address, which custom domains' SPF (a:mx.inboxd.test) is checked against.
  w.dns.set("mx.inboxd.test", "A", ["127.0.0.1"]);
});
afterAll(() => w.close());

const api = {
  post: (path: string, body?: unknown) => w.server.api.post(path, body, w.apiKey),
  get: (path: string) => w.server.api.get(path, w.apiKey),
};

async function addDomain(name: string) {
  const res = await api.post("/v1/domains", { name });
  expect(res.status).toBe(201);
  return res.body;
}

async function sendFrom(inboxId: string) {
  const res = await api.post(`/v1/inboxes/${inboxId}/messages/send`, { to: ["alice@remote.test"], subject: "From our own domain", text: "Hi.", html: "<p>Hi.</p>" });
  expect(res.status).toBe(201);
  await w.queue.runDueNow();
  return (await api.get(`/v1/inboxes/${inboxId}/messages/${res.body.id}`)).body;
}

/** The sink's copy of the last message sent to alice@remote.test. */
const lastDelivered = () => w.sink.messages.filter((message) => message.rcptTo.includes("alice@remote.test")).at(-1)!.raw;

const signatures = (raw: Buffer) =>
  [...raw.toString().split("\r\n\r\n")[0].replace(/\r\n[ \t]+/g, " ").matchAll(/^DKIM-Signature:(.*)$/gim)].map((match) => {
    const tags = Object.fromEntries(match[1].split(";").map((tag) => tag.trim().split("=")).map(([name, ...value]) => [name, value.join("=")]));
    return { d: tags.d, s: tags.s, a: tags.a };
  });

const dkimSelectors = (records: ApiRecord[]) => records.filter((record) => record.name.includes("._domainkey.")).map((record) => record.name.split(".")[0]);

describe("inboxes on a custom domain", () => {
  test("422 before its MX verifies, 201 after; never on another organization's domain", async () => {
    const domain = await addDomain("inbox-domain.example");
    const early = await api.post("/v1/inboxes", { email: "hello@inbox-domain.example" });
    expect(early.status).toBe(422);
    expect(early.body.error).toContain("not verified for receiving yet");

    publishRecords(w.dns, [recordOf(domain.records, "MX")]);
    expect((await api.post(`/v1/domains/${domain.id}/verify`)).body.receiving).toBe(true);
    const created = await api.post("/v1/inboxes", { email: "Hello@Inbox-Domain.example" });
    expect(created.status).toBe(201);
    expect(created.body.email).toBe("hello@inbox-domain.example");

    const stranger = await w.server.api.post("/auth/register", { firstName: "S", lastName: "T", username: "stranger@elsewhere.example", password: "correct horse battery" });
    const theirs = await w.server.api.post("/v1/inboxes", { email: "mine@inbox-domain.example" }, stranger.body.apiKey.key);
    expect(theirs.status).toBe(422);
    expect(theirs.body.error).toContain("nor a domain of this organization");
  });

  test("inbound: the SMTP server refuses mail for the domain as relaying until its MX verifies, then delivers it to the inbox", async () => {
    const smtpPort = w.server.running.parts.find((part) => part.name === "smtp")!.address!.port;
    const mail = (to: string, subject: string) =>
      sendMail(smtpPort, {
        from: "bob@remote.test",
        to: [to],
        raw: [`From: Bob <bob@remote.test>`, `To: ${to}`, `Subject: ${subject}`, `Message-ID: <${subject.replaceAll(" ", "-")}@remote.test>`, "Date: Sat, 14 Mar 2026 10:00:00 +0000", "", "Hello team.", ""].join("\r\n"),
      });
    const domain = await addDomain("inbound.example");
    const refused = await mail("team@inbound.example", "too early").catch((error) => error);
    expect(refused.responseCode).toBe(550);
    expect(refused.response).toContain("Relaying denied");

    publishRecords(w.dns, [recordOf(domain.records, "MX")]);
    await api.post(`/v1/domains/${domain.id}/verify`);
    const inbox = (await api.post("/v1/inboxes", { email: "team@inbound.example" })).body;
    expect((await mail("Team+news@Inbound.Example", "just right")).accepted).toEqual(["Team+news@Inbound.Example"]);
    const messages = (await api.get(`/v1/inboxes/${inbox.id}/messages`)).body;
    expect(messages.map((message: any) => [message.subject, message.status, message.from])).toEqual([["just right", "received", "bob@remote.test"]]);
  });
});

describe("outbound mail from a custom domain", () => {
  let brand: { id: string; records: ApiRecord[] };
  let inboxId: string;
  let signed: Buffer;
  const bySelector = <T extends { s: string }>(list: T[]) => [...list].sort((a, b) => a.s.localeCompare(b.s));

  test("is signed with the domain's keys, d= the domain, and both signatures verify", async () => {
    brand = await addDomain("brand.example");
    publishRecords(w.dns, brand.records);
    expect((await api.post(`/v1/domains/${brand.id}/verify`)).body).toMatchObject({ status: "verified", sending: true });
    inboxId = (await api.post("/v1/inboxes", { email: "news@brand.example" })).body.id;

    expect((await sendFrom(inboxId)).status).toBe("delivered");
    signed = lastDelivered();
    const expected = dkimSelectors(brand.records).map((selector) => ({ d: "brand.example", s: selector, a: selector.endsWith("r") ? "rsa-sha256" : "ed25519-sha256" }));
    expect(bySelector(signatures(signed))).toEqual(bySelector(expected));
    const verified = await dkimVerify(signed, { resolver: createResolver([w.dns.address]).forMailauth });
    expect(verified.results.map((result) => [result.signingDomain, result.status?.result])).toEqual([
      ["brand.example", "pass"],
      ["brand.example", "pass"],
    ]);
  });

  test.skipIf(dkimverifyMissing !== undefined)(`both signatures verify with dkimverify from python3-dkim${dkimverifyMissing ? ` — skipped: ${dkimverifyMissing}` : ""}`, async () => {
    expect(await dkimverify(signed, 0, w.dns.port)).toEqual({ exitCode: 0, output: "signature ok" });
    expect(await dkimverify(signed, 1, w.dns.port)).toEqual({ exitCode: 0, output: "signature ok" });
  });

  test("after a key rotation, the old keys sign until the new records verify, then the new keys", async () => {
    const rotated = (await api.post(`/v1/domains/${brand.id}/rotate-dkim`)).body;
    const selectorsUsed = () => signatures(lastDelivered()).map((signature) => signature.s).sort();
    await sendFrom(inboxId);
    expect(selectorsUsed()).toEqual(dkimSelectors(brand.records).sort());
    publishRecords(w.dns, rotated.records);
    await api.post(`/v1/domains/${brand.id}/verify`);
    await sendFrom(inboxId);
    expect(selectorsUsed()).toEqual(dkimSelectors(rotated.records).slice(2).sort());
    const verified = await dkimVerify(lastDelivered(), { resolver: createResolver([w.dns.address]).forMailauth });
    expect(verified.results.map((result) => result.status?.result)).toEqual(["pass", "pass"]);
  });

  test("is never sent unsigned from a domain whose DKIM records are not verified", async () => {
    const domain = await addDomain("unsigned.example");
    publishRecords(w.dns, [recordOf(domain.records, "MX")]);
    await api.post(`/v1/domains/${domain.id}/verify`);
    const inbox = (await api.post("/v1/inboxes", { email: "news@unsigned.example" })).body;
    const before = w.sink.messages.length;
    const res = await api.post(`/v1/inboxes/${inbox.id}/messages/send`, { to: ["alice@remote.test"], subject: "Unsigned?", text: "Hi.", html: "<p>Hi.</p>" });
    await w.queue.runDueNow();
    expect(w.sink.messages.length).toBe(before);
    // Refused at send, or accepted and then rejected without an attempt: never delivered unsigned.
    if (res.status === 201) expect((await api.get(`/v1/inboxes/${inbox.id}/messages/${res.body.id}`)).body.status).toBe("rejected");
    else expect(res.status).toBe(422);
  });
});
