// What the reference servers of bench/smtp-ingest share: smtp-server with the library's defaults
// (its hard-coded 100 ms greeting wait included), on a free loopback port that it prints.
import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";

export function listenAsReference(onData: NonNullable<SMTPServerOptions["onData"]>): void {
  const server = new SMTPServer({
    logger: false,
    disabledCommands: ["AUTH", "STARTTLS"],
    disableReverseLookup: true,
    size: 25 * 1024 * 1024,
    onData,
  });
  server.on("error", () => {});
  server.listen(0, "127.0.0.1", () => console.log((server.server.address() as AddressInfo).port));
}
