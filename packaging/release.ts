/**
 * `bun run release`: the single executable for each Linux architecture we ship, cross-compiled by
 * Bun, plus SHA256SUMS for checking a download (`sha256sum -c SHA256SUMS`).
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

const root = join(import.meta.dir, "..");
const targets = [
  { target: "bun-linux-x64", file: "dist/inboxd-linux-x64" },
  { target: "bun-linux-arm64", file: "dist/inboxd-linux-arm64" },
];

const sums: string[] = [];
for (const { target, file } of targets) {
  const build = Bun.spawnSync(["bun", "build", "--compile", `--target=${target}`, "src/main.ts", "--outfile", file], { cwd: root, stdout: "inherit", stderr: "inherit" });
  if (build.exitCode !== 0) process.exit(build.exitCode ?? 1);
  const digest = createHash("sha256").update(readFileSync(join(root, file))).digest("hex");
  sums.push(`${digest}  ${basename(file)}`);
}
writeFileSync(join(root, "dist/SHA256SUMS"), sums.join("\n") + "\n");
console.log(sums.join("\n"));
