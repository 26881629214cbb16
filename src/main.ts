#!/usr/bin/env bun
/** CLI entry: the only place that wires parts together. */
import { openApp } from "./app";
import { ConfigError, loadConfig, parseFlags, settingsHelp } from "./config";
import { DataDirLockedError } from "./db/open";
import { formatFindings, runDoctor } from "./doctor/command";
import { serviceDnsZone } from "./outbound/dns-command";
import { startServices } from "./serve";
import { version } from "./version";

const commands = {
  serve: "run the HTTP API, the SMTP server and the queues (default)",
  migrate: "apply pending database migrations and exit",
  version: "print the version",
  dns: "print the DNS records of INBOXD_MAIL_DOMAIN (MX, SPF, DKIM, DMARC) as zone-file lines",
  doctor: "check this server's DNS, reverse DNS, port 25, certificate, data dir and clock",
};

function help(): string {
  const list = Object.entries(commands).map(([name, text]) => `  ${name.padEnd(10)} ${text}`).join("\n");
  return `inboxd ${version}: a self-hosted mail appliance in one executable\n\nUsage: inboxd [command] [--flag value ...]\n\nCommands:\n${list}\n\nSettings (environment variable, default, meaning; each also a flag, e.g. --http-port 8006):\n  INBOXD_CONFIG                            (unset)      optional file of KEY=VALUE lines\n${settingsHelp()}\n`;
}

async function main(argv: string[]): Promise<number> {
  const { flags, positional } = parseFlags(argv);
  const command = positional[0] ?? "serve";
  if (flags["--help"] || command === "help") {
    process.stdout.write(help());
    return 0;
  }
  if (command === "version") {
    process.stdout.write(`inboxd ${version}\n`);
    return 0;
  }
  if (!(command in commands)) {
    process.stderr.write(`inboxd: unknown command '${command}' (see inboxd --help)\n`);
    return 2;
  }
  const config = loadConfig(process.env, flags);
  if (command === "doctor") {
    const findings = await runDoctor(config);
    process.stdout.write(formatFindings(findings));
    return findings.every((finding) => finding.ok) ? 0 : 1;
  }
  if (command === "dns") {
    process.stdout.write(await serviceDnsZone(config));
    return 0;
  }
  const app = openApp(config);
  if (command === "migrate") {
    app.close();
    return 0;
  }
  const running = await startServices(app);
  // A stray error in one connection's callback must not end every other connection and queue:
  // logged, and the server keeps serving (start-up failures above still stop it).
  process.on("uncaughtException", (error) => app.log.error("uncaught exception; still serving", { error }));
  process.on("unhandledRejection", (error) => app.log.error("unhandled rejection; still serving", { error }));
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      app.log.info("shutting down", { signal });
      resolve();
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
  });
  await running.stop();
  app.close();
  app.log.info("stopped");
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    if (error instanceof ConfigError) process.stderr.write(`inboxd: invalid configuration: ${error.message}\n`);
    else if (error instanceof DataDirLockedError) process.stderr.write(`inboxd: ${error.message}\n`);
    else process.stderr.write(`inboxd: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(error instanceof ConfigError || error instanceof DataDirLockedError ? 2 : 1);
  },
);
