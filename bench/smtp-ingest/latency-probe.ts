// One more SMTP session beside smtp-source's, sending the bench message over and over and timing
// each end of data (the final CRLF.CRLF written) to the reply: the delay a sender sees for its 250.
import { openSession } from "../../test/smtp/raw-client";

export interface LatencyProbe {
  /** Ends the session once its message under way is answered; resolves with each delay in ms. */
  stop(): Promise<number[]>;
}

export async function startLatencyProbe(port: number, file: string, from: string, to: string): Promise<LatencyProbe> {
  // smtp-source sends the file's lines with CRLF; RFC 5321 §4.5.2 dot-stuffing for lines that start with a dot.
  const data = file.replace(/\r?\n/g, "\r\n").replace(/^\./gm, "..") + (file.endsWith("\n") ? "" : "\r\n") + ".\r\n";
  const session = await openSession(port);
  if ((await session.command("EHLO probe.bench")).code !== 250) throw new Error("the probe's EHLO was refused");
  const delays: number[] = [];
  let stopping = false;
  const running = (async () => {
    while (!stopping) {
      session.write(`MAIL FROM:<${from}>\r\nRCPT TO:<${to}>\r\nDATA\r\n`);
      for (const expected of [250, 250, 354]) {
        const reply = await session.reply(60_000);
        if (reply.code !== expected) throw new Error(`probe: ${reply.text}`);
      }
      session.write(data);
      const endOfData = performance.now();
      const reply = await session.reply(60_000);
      if (reply.code !== 250) throw new Error(`probe: ${reply.text}`);
      delays.push(performance.now() - endOfData);
    }
  })();
  return {
    async stop() {
      stopping = true;
      await running;
      session.end();
      return delays;
    },
  };
}

/** The value below which `share` of the sorted samples fall (nearest rank). */
export function percentile(samples: number[], share: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))] ?? NaN;
}
