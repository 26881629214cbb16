// Mail clients that are not inboxd deliver to beta over SMTP as they would to any MX: swaks
// (Debian), and Python's smtplib with a message built by its email package, which beta must read
// exactly as Python's own parser does.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../harness";
import { binaryMissing, startAppliances, type Appliances } from "./appliances";

const swaks = Bun.which("swaks");
const python = Bun.which("python3");
const swaksMissing = swaks ? undefined : "swaks is not installed (apt-get install swaks)";
const pythonMissing = python ? undefined : "python3 is not on PATH";

let world: Appliances;
const workDir = tempDir("inboxd-e2e-clients");

const skipped = (reason: string | undefined) => (reason ? ` — skipped: ${reason}` : "");

async function run(command: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { exitCode, stdout, stderr };
}

describe.skipIf(binaryMissing !== undefined)(`other mail clients deliver to beta${skipped(binaryMissing)}`, () => {
  beforeAll(async () => {
    world = await startAppliances();
  }, 30_000);
  afterAll(async () => {
    await world?.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  test.skipIf(swaksMissing !== undefined)(`swaks delivers a message with an attachment over STARTTLS${skipped(swaksMissing)}`, async () => {
    const { beta } = world;
    const file = join(workDir, "scan.pdf");
    const content = randomBytes(10_000);
    writeFileSync(file, content);
    const sent = await run([swaks!, "--server", `127.0.0.1:${beta.smtpPort}`, "--tls", "--ehlo", "swaks.example", "--from", "someone@swaks.example", "--to", beta.account.inbox.email, "--header", "Subject: Sent with swaks", "--body", "Hello from swaks.", "--attach-type", "application/pdf", "--attach", `@${file}`]);
    expect(sent.exitCode, sent.stdout + sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/<~ {2}250 /);

    const message = await beta.received(beta.account.inbox.id, "Sent with swaks");
    expect(message).toMatchObject({ from: "someone@swaks.example", to: [beta.account.inbox.email], status: "received" });
    expect(message.text.trim()).toBe("Hello from swaks.");
    expect(message.attachments).toMatchObject([{ name: "scan.pdf", contentType: "application/pdf", size: content.length }]);
    expect(Buffer.from(message.attachments[0].content, "base64").equals(content)).toBe(true);
    await beta.event("message.received", message.id);
  });

  test.skipIf(pythonMissing !== undefined)(`a multipart message from Python's smtplib and email packages is read as Python reads it${skipped(pythonMissing)}`, async () => {
    const { beta } = world;
    const sent = await run([python!, join(import.meta.dir, "python-client.py"), "127.0.0.1", String(beta.smtpPort), "sender@python.example", beta.account.inbox.email]);
    expect(sent.exitCode, sent.stderr).toBe(0);
    const parsedByPython = JSON.parse(sent.stdout);

    const message = await beta.received(beta.account.inbox.id, parsedByPython.subject);
    expect({ subject: message.subject, text: message.text, html: message.html }).toEqual({ subject: parsedByPython.subject, text: parsedByPython.text, html: parsedByPython.html });
    expect(message.from).toBe("sender@python.example");
    expect(message.attachments.map(({ name, contentType, content }: any) => ({ name, contentType, content }))).toEqual(parsedByPython.attachments);
  });
});
