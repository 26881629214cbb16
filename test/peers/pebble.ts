// Let's Encrypt's test ACME server (Debian's `pebble`) on loopback, for the certificate tests: its
// DNS look-ups go to a test DNS server and its HTTP-01 validations to the port inboxd answers on.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, waitForPort } from "./ports";
import { selfSignedCert } from "./tls";

export const PEBBLE = "/usr/bin/pebble";
/** Why the pebble tests are skipped on this machine, or undefined when they can run. */
export const pebbleMissing = existsSync(PEBBLE) ? undefined : `${PEBBLE} is not installed (apt-get install -y pebble; .ci/run installs it)`;

export type Pebble = {
  directoryUrl: string;
  /** The CA of the directory's own HTTPS certificate (INBOXD_ACME_CA_FILE). */
  caFile: string;
  /** The root that signs the certificates pebble issues (made anew at each start). */
  issuingRoot(): Promise<string>;
  stop(): Promise<void>;
};

export async function startPebble(options: { dir: string; dnsServer: string; httpPort: number; validitySeconds: number }): Promise<Pebble> {
  const [listenPort, managementPort] = [await freePort(), await freePort()];
  const tls = selfSignedCert("127.0.0.1");
  const caFile = join(options.dir, "pebble-ca.pem");
  const keyFile = join(options.dir, "pebble-key.pem");
  writeFileSync(caFile, tls.cert);
  writeFileSync(keyFile, tls.key);
  const configFile = join(options.dir, "pebble.json");
  writeFileSync(
    configFile,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${listenPort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: caFile,
        privateKey: keyFile,
        httpPort: options.httpPort,
        // TLS-ALPN-01 is not offered by inboxd; a port nobody listens on.
        tlsPort: await freePort(),
        ocspResponderURL: "",
        externalAccountBindingRequired: false,
        certificateValidityPeriod: options.validitySeconds,
      },
    }),
  );
  const child: ChildProcess = spawn(PEBBLE, ["-config", configFile, "-dnsserver", options.dnsServer], {
    // No random sleeps, no rejected nonces, and a fresh authorization (so a fresh validation) for every order.
    env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", PEBBLE_AUTHZREUSE: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const directoryUrl = `https://127.0.0.1:${listenPort}/dir`;
  const started = Date.now();
  while (!output.includes("Listening on")) {
    if (child.exitCode !== null || Date.now() - started > 10_000) throw new Error(`pebble did not start: ${output}`);
    await Bun.sleep(20);
  }
  // pebble logs each listener before it binds it: the management one refused a connection in a CI run.
  await Promise.all([waitForPort(listenPort), waitForPort(managementPort)]);
  return {
    directoryUrl,
    caFile,
    async issuingRoot() {
      const response = await fetch(`https://127.0.0.1:${managementPort}/roots/0`, { tls: { ca: tls.cert } });
      return response.text();
    },
    async stop() {
      child.kill();
      await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once("exit", resolve)));
    },
  };
}
