// The reference for bench/smtp-ingest: a bare smtp-server that reads each message and discards
// it, with the library's defaults (its hard-coded 100 ms greeting wait included). Prints its port.
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

const server = new SMTPServer({
  logger: false,
  disabledCommands: ["AUTH", "STARTTLS"],
  disableReverseLookup: true,
  size: 25 * 1024 * 1024,
  onData(stream, _session, callback) {
    stream.on("data", () => {});
    stream.on("end", () => callback());
  },
});
server.on("error", () => {});
server.listen(0, "127.0.0.1", () => console.log((server.server.address() as AddressInfo).port));
