// A custom domain on beta, set up as its owner would: add it, publish the records beta lists,
// verify, open an inbox on it; then the round trip from alpha to it and back, authenticated as
// the custom domain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { publishRecords } from "../domains/zone";
import { binaryMissing, signingDomains, startAppliances, type Appliances } from "./appliances";

let world: Appliances;

describe.skipIf(binaryMissing !== undefined)(`a custom domain on beta${binaryMissing ? ` — skipped: ${binaryMissing}` : ""}`, () => {
  beforeAll(async () => {
    world = await startAppliances();
  }, 30_000);
  afterAll(() => world?.close());

  test("published and verified, it receives alpha's message and its reply reaches alpha's thread, DKIM-signed as the domain", async () => {
    const { alpha, beta, dns } = world;
    const added = await beta.call("POST", "/v1/domains", { name: "gamma.test" });
    expect(added).toMatchObject({ name: "gamma.test", status: "pending", verified: false });
    expect(added.records).toContainEqual(expect.objectContaining({ type: "MX", name: "gamma.test", value: "mx.beta.test", priority: 10 }));
    publishRecords(dns, added.records);
    const verified = await beta.call("POST", "/v1/domains/gamma.test/verify", undefined, 200);
    expect(verified).toMatchObject({ status: "verified", verified: true, receiving: true, sending: true });

    const help = await beta.call("POST", "/v1/inboxes", { name: "Gamma support", email: "help@gamma.test" });
    const question = await alpha.send(alpha.account.inbox.id, { to: ["help@gamma.test"], subject: "Question for Gamma", text: "Does it work?", html: "<p>Does it work?</p>" });

    const arrived = await beta.received(help.id, "Question for Gamma");
    expect(arrived).toMatchObject({ from: alpha.account.inbox.email, to: ["help@gamma.test"], text: "Does it work?", authentication: { spf: "pass", dkim: "pass", dmarc: "pass" } });
    await beta.event("message.received", arrived.id);
    await alpha.messageWhen(alpha.account.inbox.id, question.id, "delivered", (message) => message.status === "delivered");

    const reply = await beta.call("POST", `/v1/inboxes/${help.id}/messages/${arrived.id}/reply`, { text: "It works.", html: "<p>It works.</p>" });
    expect(reply).toMatchObject({ from: "help@gamma.test", to: [alpha.account.inbox.email], threadId: arrived.threadId });
    const answer = await alpha.received(alpha.account.inbox.id, "Re: Question for Gamma");
    expect(answer).toMatchObject({ from: "help@gamma.test", threadId: question.threadId, text: "It works.", authentication: { spf: "pass", dkim: "pass", dmarc: "pass" } });
    // DMARC passes for gamma.test only through a signature of gamma.test's own keys.
    expect(signingDomains(await alpha.rawSource(answer.id))).toEqual(["gamma.test", "gamma.test"]);
    await beta.messageWhen(help.id, reply.id, "delivered", (message) => message.status === "delivered");
  });
});
