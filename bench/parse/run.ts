// bench/parse: the MIME parse of a received message, as the analysis threads run it:
// src/mail/parse.ts (mailparser's simpleParser, bounded, a large message handed over in 64 KiB
// slices) beside postal-mime, the parser issue 20 weighed against it and did not adopt
// (docs/benchmarks.md), in one run.
// (1) µs per message, wall and CPU time, the two parsers taking turns round by round so that
// other load on the machine falls on both alike: bench/smtp-ingest's 4.4 kB message (text and
// HTML in quoted-printable), and a short message with a 100 KiB attachment (base64);
// (2) time and peak resident memory of one 20 MB message (a 15 MB base64 attachment), each
// parser in a fresh process of its own, the memory counted from just before the parse.
// Run: bun bench/parse/run.ts [messages, default 20000]
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import PostalMime from "postal-mime";
import { composeMessage } from "../../src/mail/compose";
import { parseMessage } from "../../src/mail/parse";
import { benchMessage } from "../smtp-ingest/message";

const parsers = {
  "mailparser (src/mail/parse.ts)": (raw: Buffer) => parseMessage(raw),
  "postal-mime": (raw: Buffer) => PostalMime.parse(raw),
};
type ParserName = keyof typeof parsers;

/** 20 MB: a short text part and 15 MB of random bytes in base64, 76 characters a line. */
function largeMessage(): Buffer {
  const content = randomBytes(15 * 1024 * 1024);
  const head = `From: a@example.com\r\nTo: b@example.com\r\nSubject: large\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n--b\r\nContent-Type: application/octet-stream; name=large.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n`;
  return Buffer.from(`${head}${content.toString("base64").replace(/.{76}/g, "$&\r\n")}\r\n--b--\r\n`);
}

const statusKiB = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync("/proc/self/status", "utf8"))![1]);

/** In a child process: parses the large message once and prints its time and peak memory as JSON. */
async function measureLarge(name: ParserName): Promise<void> {
  const raw = largeMessage();
  await parsers[name](Buffer.from("From: a@example.com\r\n\r\nwarm-up\r\n"));
  Bun.gc(true);
  // Resets the kernel's peak resident size to the current one (proc(5), clear_refs).
  writeFileSync("/proc/self/clear_refs", "5");
  const before = statusKiB("VmRSS");
  const started = performance.now();
  await parsers[name](raw);
  console.log(JSON.stringify({ ms: performance.now() - started, peakMiB: (statusKiB("VmHWM") - before) / 1024, messageMiB: raw.length / 1024 / 1024 }));
}

async function perMessage(raw: Buffer, messages: number): Promise<void> {
  const [ours, theirs] = [await parseMessage(raw), await PostalMime.parse(raw)];
  if (ours.text?.trim() !== theirs.text?.trim() || ours.attachments.length !== theirs.attachments.length) throw new Error("the two parsers read the message differently");
  const rounds = 10;
  const perRound = Math.ceil(messages / rounds);
  const figures = Object.fromEntries(Object.keys(parsers).map((name) => [name, { wall: [] as number[], cpu: [] as number[] }]));
  for (const parse of Object.values(parsers)) for (let i = 0; i < perRound; i++) await parse(raw);
  for (let round = 0; round < rounds; round++) {
    for (const [name, parse] of Object.entries(parsers)) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < perRound; i++) await parse(raw);
      const used = process.cpuUsage(cpu);
      figures[name]!.wall.push(((performance.now() - started) * 1000) / perRound);
      figures[name]!.cpu.push((used.user + used.system) / perRound);
    }
  }
  const range = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return `${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} (${sorted[0]!.toFixed(0)}-${sorted.at(-1)!.toFixed(0)})`;
  };
  for (const [name, { wall, cpu }] of Object.entries(figures)) console.log(`  ${name.padEnd(34)} wall ${range(wall)}  CPU ${range(cpu)}`);
}

const largeArgument = process.argv.find((argument) => argument.startsWith("--large="));
if (largeArgument) await measureLarge(largeArgument.slice("--large=".length) as ParserName);
else {
  const messages = Number(process.argv[2] ?? 20_000);
  console.log(`µs per message: median of 10 rounds (fastest-slowest round)`);
  const benchRaw = Buffer.from((await benchMessage("bench@inboxd.test")).file.replaceAll("\n", "\r\n"), "latin1");
  console.log(`bench/smtp-ingest's message, ${benchRaw.length} bytes, ${messages} parses each:`);
  await perMessage(benchRaw, messages);
  const withAttachment = await composeMessage({
    from: "alice@sender.bench",
    to: ["bench@inboxd.test"],
    subject: "The report",
    text: "Hello Bob, the report is attached.",
    html: "<p>Hello Bob, the report is attached.</p>",
    attachments: [{ filename: "report.pdf", content: randomBytes(100 * 1024) }],
    messageId: "<report@sender.bench>",
    date: new Date(),
  });
  console.log(`text, HTML and a 100 KiB attachment in base64, ${withAttachment.length} bytes, ${messages / 10} parses each:`);
  await perMessage(withAttachment, messages / 10);
  console.log("one 20 MB message (15 MB base64 attachment), each parser in a fresh process:");
  for (const name of Object.keys(parsers)) {
    const child = Bun.spawnSync([process.execPath, import.meta.path, `--large=${name}`], { stderr: "inherit" });
    const { ms, peakMiB, messageMiB } = JSON.parse(child.stdout.toString());
    console.log(`  ${name.padEnd(34)} ${ms.toFixed(0)} ms, peak resident memory ${peakMiB.toFixed(0)} MiB over the ${messageMiB.toFixed(1)} MiB message`);
  }
}
