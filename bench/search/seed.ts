// Seeding for the search and API benchmarks: messages of ~2 kB of word-like text, written through
// the store (the same rows, index and triggers as real mail) in large transactions.
import type { App } from "../../src/app";
import { newId } from "../../src/ids";
import type { InboxRecord } from "../../src/store";

/** A fixed-seed generator, so every run searches the same corpus. */
export function seededRandom(seed = 7) {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
}

const syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pre", "dan", "gor", "bel", "tis", "qua", "ren", "zu", "fa", "xel", "om", "id"];

/** 20,000 made-up words, used with a Zipf-like skew: low ranks are common, high ranks rare. */
export function vocabulary(random = seededRandom(1)): string[] {
  const words = new Set<string>();
  while (words.size < 20_000) {
    const length = 2 + Math.floor(random() * 3);
    words.add(Array.from({ length }, () => syllables[Math.floor(random() * syllables.length)]).join(""));
  }
  return [...words];
}

export interface Corpus {
  words: string[];
  /** One message in this many carries "invoice #<6 digits>", the regex benchmark's target. */
  invoiceEvery: number;
  text(): string;
  subject(): string;
}

export function corpus(textBytes = 2048): Corpus {
  const random = seededRandom(3);
  const words = vocabulary();
  const word = () => words[Math.floor(words.length * random() ** 3)]!;
  const invoiceEvery = 500;
  let count = 0;
  return {
    words,
    invoiceEvery,
    text() {
      const parts: string[] = [];
      let length = 0;
      while (length < textBytes) {
        const next = word();
        parts.push(next);
        length += next.length + 1;
      }
      if (++count % invoiceEvery === 0) parts.splice(Math.floor(random() * parts.length), 0, `invoice #${String(Math.floor(random() * 1e6)).padStart(6, "0")}`);
      return parts.join(" ");
    },
    subject: () => `${word()} ${word()} ${word()}`,
  };
}

/** Appends `count` received messages to the inbox, one thread each, in transactions of 5,000. */
export async function seedMessages(app: Pick<App, "store" | "clock">, inbox: InboxRecord, count: number, content: Corpus, onProgress?: (done: number) => void) {
  const batch = 5_000;
  for (let done = 0; done < count; done += batch) {
    await app.store.transaction(async (tx) => {
      for (let i = done; i < Math.min(count, done + batch); i++) {
        const now = app.clock.now();
        const threadId = (await tx.threads.insert({ id: newId("thr"), organizationId: inbox.organizationId, inboxId: inbox.id, subject: "s", createdAt: now })).id;
        await tx.messages.insert(
          {
            id: newId("msg"),
            organizationId: inbox.organizationId,
            inboxId: inbox.id,
            threadId,
            fromInboxId: null,
            toInboxId: inbox.id,
            from: `sender${i % 1000}@example.com`,
            fromName: null,
            to: [inbox.email],
            cc: [],
            bcc: [],
            replyTo: [],
            subject: content.subject(),
            text: content.text(),
            html: null,
            labels: [],
            read: false,
            status: "received",
            messageIdHeader: `<${i}@bench.example>`,
            receivedDigest: null,
            inReplyTo: null,
            references: [],
            authentication: null,
            externalMessageId: null,
            createdAt: now,
            updatedAt: now,
          },
          { bytes: new Uint8Array(0), blobId: null },
          [],
        );
      }
    });
    onProgress?.(Math.min(count, done + batch));
  }
  // On SQLite the search index follows the messages in the background, and a search first indexes
  // what still waits (src/store/sqlite/search-index.ts): done here, so that the benchmarks time
  // their searches and requests, not that catch-up.
  await app.store.messageSearch.containing(inbox.id, "index caught up", 1, 1);
}
