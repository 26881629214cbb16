// A JSON body of 20 MB that is one array of ten million numbers, on a route that takes a body: the
// parser's walks of the parsed value (the nesting bound, the NUL check) copied every container's
// items, holding the event loop 9 s and taking 1 GB. It is answered, and /health answers in about
// the time the JSON parse itself takes (one turn), measured from a process of its own beside a
// bare server's answers (test/peers/latency-probe.ts).
import { expect, test } from "bun:test";
import { join } from "node:path";
import { inboxdCommand, register, scratch, startChildServer, testEnv } from "../harness";

const space = scratch();

/** JSON.parse of 20 MB takes 0.2-0.4 s on the 2-core machine, in one turn; the walks after it, 20 ms. */
const HEALTH_BOUND_MS = 1500;

test("a 20 MB body of ten million numbers is answered, and /health meanwhile within the parse's own time", async () => {
  const child = space.keep(await startChildServer(testEnv(space.dir()), { command: inboxdCommand() }));
  const { apiKey } = await register(child.api);
  // A NUL at the end: the NUL check walks every item before it finds it.
  const body = `{"name":"wide","labels":[${"0,".repeat(10_000_000)}"\\u0000"]}`;
  const reference = Bun.spawn([process.execPath, join(import.meta.dir, "../peers/bare-http-server.ts")], { stdout: "pipe" });
  const referencePort = Number(new TextDecoder().decode((await reference.stdout.getReader().read()).value));
  const probe = Bun.spawn([process.execPath, join(import.meta.dir, "../peers/latency-probe.ts"), `http://127.0.0.1:${child.httpPort}/health`, `http://127.0.0.1:${referencePort}/`], { stdout: "pipe" });
  const res = await child.api.request("POST", "/v1/inboxes", { token: apiKey.key, rawBody: body, headers: { "content-type": "application/json" } });
  probe.kill("SIGTERM");
  const [slowestHealthMs, slowestReferenceMs] = (await new Response(probe.stdout).text()).trim().split(" ").map(Number) as [number, number];
  reference.kill();
  console.log(`slowest /health ${slowestHealthMs} ms (a bare server's meanwhile ${slowestReferenceMs} ms)`);
  expect(res.status).toBe(422);
  expect(res.body).toEqual({ error: "body: a string must not hold NUL (U+0000)" });
  expect(slowestHealthMs).toBeLessThan(HEALTH_BOUND_MS + slowestReferenceMs);
}, 60_000);
