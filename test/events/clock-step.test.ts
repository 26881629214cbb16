// Event ids made after the clock stepped back: ids order the stream, and a client resumes after
// the last one it holds (Last-Event-ID). Events made while the clock ran ahead (here written as
// rows, as a process under that clock wrote them), then a restart on the corrected clock: the
// new events still follow them, so a resume reads them.
import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { queryRows, seedOrganization, startTestServer, tempDir } from "../harness";

const dataDir = tempDir();
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

test("after a restart on a clock set back half an hour, a new event follows the newest stored one, and a resume after that one reads it", async () => {
  const first = await startTestServer({ dataDir });
  const { organizationId } = await seedOrganization(first.app);
  const ahead = `evt_${(Date.now() + 30 * 60_000).toString(16).padStart(12, "0")}${"0".repeat(12)}`;
  await queryRows(first.app, "INSERT INTO events (id, organization_id, type, payload, created_at) VALUES ($1, $2, 'inbox.created', '{}', $3)", ahead, organizationId, first.clock.now());
  await first.stop();

  const second = await startTestServer({ dataDir });
  try {
    const later = await second.app.store.transaction((tx) => tx.events.emit({ organizationId, type: "inbox.updated", payload: {} }, second.clock.now()));
    expect(later > ahead).toBe(true);
    const page = await second.app.store.events.readAfter(organizationId, { afterId: ahead, limit: 10, maxChars: 1 << 20 });
    expect(page.events.map((event) => event.id)).toEqual([later]);
  } finally {
    await second.cleanup();
  }
});
