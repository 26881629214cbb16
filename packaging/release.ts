/**
 * `bun run release`: the single executable for each Linux architecture we ship, cross-compiled by
 * Bun, plus SHA256SUMS for checking a download (`sha256sum -c SHA256SUMS`).
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import packageJson from "../package.json";

const root = join(import.meta.dir, "..");
// The entry points and options of `bun run build`: the worker threads (SMTP analysis, DKIM
// signing, WAL checkpoints) are entry points of their own, and an executable built without them
// does that work on its main thread; --splitting keeps the modules loaded on demand out of the
// code read at start (docs/benchmarks.md, "Memory").
const buildArguments = packageJson.scripts.build.split(/\s+/);
const entryPoints = buildArguments.filter((argument) => argument.endsWith(".ts"));
const options = buildArguments.filter((argument) => argument.startsWith("--") && argument !== "--compile" && argument !== "--outfile");
const targets = [
  { target: "bun-linux-x64", file: "dist/inboxd-linux-x64" },
  { target: "bun-linux-arm64", file: "dist/inboxd-linux-arm64" },
];

const sums: string[] = [];
for (const { target, file } of targets) {
  const build = Bun.spawnSync(["bun", "build", "--compile", `--target=${target}`, ...options, ...entryPoints, "--outfile", file], { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (build.exitCode !== 0) process.exit(build.exitCode ?? 1);
  const digest = createHash("sha256").update(readFileSync(join(root, file))).digest("hex");
  sums.push(`${digest}  ${basename(file)}`);
}
writeFileSync(join(root, "dist/SHA256SUMS"), sums.join("\n") + "\n");
console.log(sums.join("\n"));
