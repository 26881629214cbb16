// The second reference for bench/smtp-ingest: the minimal prototype the issue measured, an
// smtp-server that parses each message with mailparser's simpleParser and inserts one row into
// SQLite with synchronous = FULL before its 250 (one commit and fsync per message, no threads, no
// authentication, no search index, no event). Takes its data dir as argument; prints its port.
import { Database } from "bun:sqlite";
import { simpleParser } from "mailparser";
import { join } from "node:path";
import { listenAsReference } from "./reference-server";

const db = new Database(join(process.argv[2]!, "prototype.db"), { create: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = FULL");
db.exec("CREATE TABLE messages (id INTEGER PRIMARY KEY, subject TEXT, sender TEXT, text TEXT, html TEXT, raw BLOB)");
const insert = db.query("INSERT INTO messages (subject, sender, text, html, raw) VALUES (?1, ?2, ?3, ?4, ?5)");

listenAsReference((stream, _session, callback) => {
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("end", async () => {
    const raw = Buffer.concat(chunks);
    try {
      const mail = await simpleParser(raw);
      insert.run(mail.subject ?? "", mail.from?.text ?? "", mail.text ?? null, mail.html || null, raw);
      callback();
    } catch (error) {
      callback(error as Error);
    }
  });
});
