// Hardening: the executable's resident memory at rest (issue 20: at most 80 MB). dist/inboxd starts
// on a fresh data dir with the packaged unit's environment, an account registers, and once the
// threads that start on demand have stopped (the WAL checkpoint thread, 10 s after the last write)
// its VmRSS is read five times over two seconds: the median at most 80 MB. Printed beside a
// reference measured alike in the same run, Bun.serve and smtp-server compiled as inboxd is
// (./idle-reference-server.ts), each split as /proc tells it: anonymous memory (the heaps) and the
// executable's pages read from its file (./resident-memory.ts).
import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { onPostgres, packagedRuntimeEnv, register, repoRoot, scratch, sqliteOnly, startChildServer, testEnv } from "../harness";
import { describeResident, resident, untilAtRest, type Resident } from "./resident-memory";

const IDLE_BOUND_MB = 80;
const executable = join(repoRoot, "dist/inboxd");
const space = scratch();

/**
 * Five samples 500 ms apart, the median by VmRSS: a worker that has just ended gives its heap back
 * within a moment, which the first sample may not see yet.
 */
async function sampled(pid: number): Promise<Resident> {
  const samples: Resident[] = [];
  for (let n = 0; n < 5; n++, await Bun.sleep(500)) samples.push(resident(pid));
  return samples.sort((a, b) => a.vmRss - b.vmRss)[2]!;
}

if (!existsSync(executable)) test.skip("idle memory of the executable: skipped, dist/inboxd is not built (npm run build)", () => {});

const title = sqliteOnly(`dist/inboxd at rest holds at most ${IDLE_BOUND_MB} MB`, "the bound is of the embedded database, the default (on PostgreSQL 78-79 MB measured)");
test.skipIf(!existsSync(executable) || onPostgres)(title, async () => {
  const referenceFile = join(space.dir(), "reference");
  const build = Bun.spawnSync([process.execPath, "build", "--compile", join(import.meta.dir, "idle-reference-server.ts"), "--outfile", referenceFile], { cwd: repoRoot, stdout: "ignore", stderr: "pipe" });
  if (build.exitCode !== 0) throw new Error(`compiling the reference: ${build.stderr.toString()}`);
  const reference = Bun.spawn([referenceFile], { env: { ...process.env, ...packagedRuntimeEnv() }, stdout: "pipe", stderr: "inherit" });
  try {
    const child = space.keep(await startChildServer(testEnv(space.dir(), packagedRuntimeEnv()), { command: [executable] }));
    await register(child.api);
    const reader = reference.stdout.getReader();
    for (let text = ""; !text.includes("\n"); ) text += new TextDecoder().decode((await reader.read()).value);
    await untilAtRest(child.proc.pid);
    const [inboxd, bare] = await Promise.all([sampled(child.proc.pid), sampled(reference.pid)]);
    console.log(`idle resident memory: dist/inboxd ${describeResident(inboxd)}; reference Bun.serve + smtp-server ${describeResident(bare)}`);
    expect(inboxd.vmRss).toBeLessThanOrEqual(IDLE_BOUND_MB);
  } finally {
    reference.kill();
  }
}, 60_000);
