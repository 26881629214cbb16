// The reference for bench/smtp-ingest: a bare smtp-server that reads each message and discards
// it, with the library's defaults (its hard-coded 100 ms greeting wait included). Prints its port.
import { listenAsReference } from "./reference-server";

listenAsReference((stream, _session, callback) => {
  stream.on("data", () => {});
  stream.on("end", () => callback());
});
