// An agent reading a thread through MCP: get_thread (and get_message) list attachments without
// their content, which get_attachment returns one at a time. The API call they make leaves the
// content out, and reads none of it: read whole, a thread of ten messages with 18 MiB attachments
// took the server past 1.2 GB for one call. The process's peak resident memory (VmHWM, reset before the call)
// shows what the call itself holds.
import { afterAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { register, startChildServer, tempDir, testEnv, type ChildServer } from "../harness";
import { sendMail } from "../smtp/mail-client";

const attachmentBytes = 12 * 1024 * 1024;
const messages = 3;
const dataDir = tempDir();
let child: ChildServer | undefined;
afterAll(async () => {
  if (child?.proc.exitCode === null) await child.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

async function peakRss(pid: number): Promise<number> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** A message of the thread: its file in base64, replying to the one before it. */
function threadMessage(to: string, n: number): string {
  const file = Buffer.alloc(attachmentBytes, n + 1).toString("base64").replace(/.{76}/g, "$&\r\n");
  const reply = n === 0 ? "" : `In-Reply-To: <part${n - 1}@sender.test>\r\nReferences: <part0@sender.test>\r\n`;
  return (
    `From: sender@sender.test\r\nTo: ${to}\r\nSubject: ${n === 0 ? "" : "Re: "}Large files\r\nMessage-ID: <part${n}@sender.test>\r\n${reply}` +
    `MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nPart ${n}.\r\n` +
    `--b\r\nContent-Type: application/octet-stream; name=part${n}.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n${file}\r\n--b--\r\n`
  );
}

test(`MCP get_thread on ${messages} messages with ${mb(attachmentBytes)} MiB attachments lists them without reading them: the server holds less than one file more`, async () => {
  child = await startChildServer(testEnv(dataDir));
  const account = await register(child.api);
  const inbox = account.inbox;
  for (let n = 0; n < messages; n++) {
    // A 4xx while the message memory holds the one before (docs/inbound-smtp.md): sent again, as a client would.
    for (;;) {
      const sent = await sendMail(child.smtpPort!, { from: "sender@sender.test", to: [inbox.email], raw: threadMessage(inbox.email, n) }).then(
        () => true,
        (error: Error) => (/ 4\.\d\.\d /.test(error.message) ? false : Promise.reject(error)),
      );
      if (sent) break;
      await Bun.sleep(200);
    }
  }
  const threads = async () => (await child!.api.get(`/v1/inboxes/${inbox.id}/threads`, account.apiKey.key)).body as { id: string; messageCount: number }[];
  let thread = (await threads())[0];
  for (const deadline = Date.now() + 30_000; thread?.messageCount !== messages && Date.now() < deadline; thread = (await threads())[0]) await Bun.sleep(100);
  expect(thread?.messageCount).toBe(messages);

  const client = new Client({ name: "inboxd-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${child.api.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${account.apiKey.key}` } } }));
  try {
    Bun.gc(true);
    // Resets the high-water mark to the resident memory now (proc(5), /proc/pid/clear_refs).
    writeFileSync(`/proc/${child.proc.pid}/clear_refs`, "5");
    const before = await peakRss(child.proc.pid);
    const result = (await client.callTool({ name: "get_thread", arguments: { inboxId: inbox.id, threadId: thread!.id } })) as unknown as { structuredContent: { messages: { attachments: { size: number; content?: string }[] }[] } };
    const grown = (await peakRss(child.proc.pid)) - before;
    console.log(`get_thread: the server's peak resident memory grew ${mb(grown)} MB for ${mb(messages * attachmentBytes)} MiB of attachments (${mb(before)} MB before)`);
    const listed = result.structuredContent.messages.flatMap((message) => message.attachments);
    expect(listed.map((attachment) => attachment.size)).toEqual(Array(messages).fill(attachmentBytes));
    expect(listed.every((attachment) => attachment.content === undefined)).toBe(true);
    // No file is read (2-3 MB measured on either engine), where reading each message's attachments
    // and leaving them out took 46-72 MB, and the content in the result 329 MB: less than one file.
    expect(grown).toBeLessThan(attachmentBytes);
  } finally {
    await client.close();
  }
}, 120_000);
