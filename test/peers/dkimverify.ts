// dkimverify (Debian python3-dkim) is an independent DKIM implementation; it reads DNS through
// dnspython, which the wrapper points at the loopback DNS server before running the real script.
import { readFileSync } from "node:fs";

const DKIMVERIFY = Bun.which("dkimverify");
const python = DKIMVERIFY ? /^#!\s*(\S+)/.exec(readFileSync(DKIMVERIFY, "utf8"))?.[1] : undefined;

/** Why dkimverify cannot run here, for a visible skip; undefined when it can. */
export const dkimverifyMissing = DKIMVERIFY && python ? undefined : "dkimverify is not on PATH (apt-get install python3-dkim)";

const WRAPPER = `
import runpy, sys
import dns.resolver
resolver = dns.resolver.Resolver(configure=False)
resolver.nameservers = ["127.0.0.1"]
resolver.port = int(sys.argv.pop(1))
dns.resolver.default_resolver = resolver
sys.argv[0] = "dkimverify"
runpy.run_path(sys.argv.pop(1), run_name="__main__")
`;

/** Verifies the `index`-th DKIM-Signature of `message` (0: the first) with keys from the DNS server on 127.0.0.1:`dnsPort`. */
export async function dkimverify(message: Buffer, index: number, dnsPort: number): Promise<{ exitCode: number; output: string }> {
  const child = Bun.spawn([python ?? "python3", "-c", WRAPPER, String(dnsPort), DKIMVERIFY ?? "", "--index", String(index)], {
    stdin: new Blob([message]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { exitCode, output: (stdout + stderr).trim() };
}
