// dkimverify (Debian python3-dkim) is an independent DKIM implementation; it reads DNS through
// dnspython, which the wrapper points at the loopback DNS server before running the real script.
import { readFileSync } from "node:fs";

const DKIMVERIFY = Bun.which("dkimverify");
const python = DKIMVERIFY ? /^#!\s*(\S+)/.exec(readFileSync(DKIMVERIFY, "utf8"))?.[1] : undefined;

/** Why dkimverify cannot run here, for a visible skip; undefined when it can. */
export const dkimverifyMissing = DKIMVERIFY && python ? undefined : "dkimverify is not on PATH (apt-get install python3-dkim)";

export interface Verdict {
  exitCode: number;
  output: string;
}

// Arguments: DNS port, the dkimverify script, the signatures to check ("0,1"). The script runs once
// per signature (--index N) in this one interpreter, each time reading the message as its stdin, and
// each run's exit code and output are printed as one JSON line.
const WRAPPER = `
import contextlib, io, json, runpy, sys
import dns.resolver
resolver = dns.resolver.Resolver(configure=False)
resolver.nameservers = ["127.0.0.1"]
resolver.port = int(sys.argv[1])
dns.resolver.default_resolver = resolver
script, indexes = sys.argv[2], sys.argv[3].split(",")
message = sys.stdin.buffer.read()
for index in indexes:
    sys.argv = ["dkimverify", "--index", index]
    sys.stdin = io.TextIOWrapper(io.BytesIO(message))
    output, code = io.StringIO(), 0
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
        except Exception as error:  # the script lets some verification errors escape: exit status 1
            code = 1
            print(f"{type(error).__name__}: {error}")
    sys.__stdout__.write(json.dumps({"exitCode": code, "output": output.getvalue().strip()}) + "\\n")
`;

/** Verifies the DKIM-Signatures of `message` at `indexes` (0: the first) with keys from the DNS server on 127.0.0.1:`dnsPort`, in one Python process. */
export async function dkimverifyEach(message: Buffer, indexes: number[], dnsPort: number): Promise<Verdict[]> {
  const child = Bun.spawn([python ?? "python3", "-c", WRAPPER, String(dnsPort), DKIMVERIFY ?? "", indexes.join(",")], {
    stdin: new Blob([message]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  const verdicts = stdout.split("\n").filter(Boolean).map((line) => JSON.parse(line) as Verdict);
  if (exitCode !== 0 || verdicts.length !== indexes.length) throw new Error(`dkimverify wrapper failed (exit ${exitCode}): ${stderr.trim()}`);
  return verdicts;
}

/** Verifies the `index`-th DKIM-Signature of `message` (0: the first) with keys from the DNS server on 127.0.0.1:`dnsPort`. */
export async function dkimverify(message: Buffer, index: number, dnsPort: number): Promise<Verdict> {
  const [verdict] = await dkimverifyEach(message, [index], dnsPort);
  return verdict!;
}
