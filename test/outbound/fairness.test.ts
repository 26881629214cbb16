// One organization's mail to hosts that take minutes to fail (a tarpit: it accepts the connection
// and never greets) opens at most half the delivery lanes: another organization's mail to a
// prompt host goes out meanwhile instead of waiting out every greeting timeout.
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as net from "node:net";
import { eventually } from "../harness";
import { startOutboundWorld, type OutboundWorld } from "./world";

let w: OutboundWorld;
const silent: net.Socket[] = [];
let tarpit: net.Server;

beforeAll(async () => {
  // Two lanes; a greeting timeout of 5 minutes scaled to 6 s.
  w = await startOutboundWorld({ env: { INBOXD_DELIVERY_CONCURRENCY: "2", INBOXD_SMTP_CLIENT_TIMEOUT_SCALE: "0.02" } });
  tarpit = net.createServer((socket) => silent.push(socket));
  await new Promise<void>((resolve) => tarpit.listen(w.sink.port, "127.0.0.3", resolve));
});
afterAll(async () => {
  for (const socket of silent) socket.destroy();
  tarpit.close();
  await w.close();
});

test("an organization's mail to tarpits holds one of two lanes: another organization's message is delivered while they hang", async () => {
  const domains = ["pit1.test", "pit2.test", "pit3.test"];
  for (const domain of domains) w.mx(domain, [{ name: `mx.${domain}`, priority: 10, address: "127.0.0.3" }]);
  w.mx("prompt.test");
  await w.send({ to: domains.map((domain) => `someone@${domain}`) });

  const other = (await w.server.api.post("/auth/register", { firstName: "O", lastName: "T", username: "prompt-org@example.com", password: "correct horse battery staple" })).body;
  const sent = await w.server.api.post(`/v1/inboxes/${other.inbox.id}/messages/send`, { to: ["friend@prompt.test"], subject: "Not held back", text: "Hi.", html: "" }, other.apiKey.key);
  expect(sent.status).toBe(201);
  void w.queue.runDueNow();

  const started = Date.now();
  await eventually("the other organization's message at the prompt host", () => w.sink.messages.some((message) => message.rcptTo.includes("friend@prompt.test")), (delivered) => delivered, 4000);
  expect(Date.now() - started).toBeLessThan(4000);
  // One lane hangs on a tarpit's greeting meanwhile: its organization opened no second one.
  expect(silent.length).toBe(1);
});
