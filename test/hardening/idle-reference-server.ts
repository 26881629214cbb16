// The reference of idle-memory.test.ts: what a server of this kind holds at rest with nothing of its
// own, Bun.serve answering HTTP and smtp-server taking SMTP on loopback, compiled as inboxd is.
// Prints its two ports as one JSON line once both listen.
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

const http = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ status: "ok" }) });
const smtp = new SMTPServer({
  logger: false,
  authOptional: true,
  disableReverseLookup: true,
  onData(stream, _session, callback) {
    stream.on("data", () => {});
    stream.on("end", () => callback());
  },
});
smtp.on("error", () => {});
smtp.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ http: http.port, smtp: (smtp.server.address() as AddressInfo).port })));
