#!/usr/bin/env bun
/** CLI entry: the only place that wires parts together. */
import { resolve } from "node:path";
import { openApp } from "./app";
import { exitOnceWritten } from "./exit";
import { ConfigError, configWarnings, loadConfig, parseFlags, settingsHelp, switches, type Config } from "./config";
import { backupDatabase, databaseLabel, restoreDatabase, StoreInUseError } from "./store/index";
import { apiCaller } from "./mcp/api-caller";
import { checkBeforeStart, startServices } from "./serve";
import { version } from "./version";

type Command = {
  usage: string;
  summary: string;
  details: string;
  /** Flags with a value that are this command's own, not settings. */
  ownFlags?: string[];
  /** Flags without a value that only this command takes (`--help` and `--version` every command does). */
  ownSwitches?: string[];
  /** How many arguments it takes after its name; more is refused (a second file was once ignored). */
  operands?: number;
  run(config: Config, args: string[], flags: Record<string, string>): Promise<number>;
};

// Each command but serve loads its modules when it runs (`await import`): the server's memory
// holds no doctor, database copy or MCP client.
const commands: Record<string, Command> = {
  serve: {
    usage: "inboxd [serve] [--flag value ...]",
    summary: "run the HTTP API, the SMTP server and the queues (default)",
    details: "Runs until SIGTERM or SIGINT, then finishes the work in flight (INBOXD_SHUTDOWN_TIMEOUT_MS).",
    run: serve,
  },
  migrate: {
    usage: "inboxd migrate",
    summary: "apply pending database migrations and exit",
    details: "serve applies them too, at every start; this says which were applied, or that the database is current.",
    async run(config) {
      let applied: string[] = [];
      (await openApp(config, { onMigrated: (versions) => (applied = versions) })).close();
      const database = databaseLabel(config);
      process.stdout.write(applied.length ? `applied ${applied.length} migrations to ${database}: ${applied.join(", ")}\n` : `${database} is current: no migration to apply\n`);
      return 0;
    },
  },
  version: { usage: "inboxd version", summary: "print the version", details: "Also: inboxd --version.", run: printVersion },
  dns: {
    usage: "inboxd dns",
    summary: "print the DNS records of INBOXD_MAIL_DOMAIN (MX, SPF, DKIM, DMARC, MTA-STS, TLS reporting, the host's A) as zone-file lines",
    details: "Makes the DKIM keys first when the data dir has none yet (and says so); while inboxd runs, reads them beside it.",
    async run(config) {
      const { serviceDnsZone } = await import("./outbound/dns-command");
      const { zone, keysMadeNow } = await serviceDnsZone(config);
      // Said on stderr: the zone on stdout stays fit to redirect into a zone file.
      if (keysMadeNow) process.stderr.write(`inboxd dns: the DKIM keys did not exist yet: made now in ${config.dataDir}; inboxd serve signs with them once these records are published\n`);
      process.stdout.write(zone);
      return 0;
    },
  },
  doctor: {
    usage: "inboxd doctor",
    summary: "check this server's DNS, reverse DNS, port 25, certificate, data dir and clock",
    details: "One line per check, with what to do under each failure; exit code 1 when any failed.",
    async run(config) {
      const { formatFindings, runDoctor } = await import("./doctor/command");
      const findings = await runDoctor(config);
      process.stdout.write(formatFindings(findings));
      return findings.every((finding) => finding.ok) ? 0 : 1;
    },
  },
  backup: {
    usage: "inboxd backup FILE",
    operands: 1,
    summary: "write a consistent copy of the database to FILE, while the server runs or not",
    details: "FILE must not exist, nor FILE.key: the key of its webhook secrets and DKIM keys, copied there from the data dir unless INBOXD_SECRET_KEY is set. Keep both with /etc/inboxd (the settings) and the data dir's smtp-tls.* files.",
    async run(config, [file]) {
      if (!file) throw new ConfigError("backup: name the file to write (inboxd backup FILE)");
      if (config.databaseUrl) throw new ConfigError(onPostgres("backup"));
      const progress = progressReporter(file);
      const { bytes, keyFile, opensWithSecretKey, keyNotGiven } = await backupDatabase(config.dataDir, resolve(file), progress, { secretKey: config.secretKey });
      progress.finish();
      const key = keyFile
        ? `; its secrets open with the key in ${keyFile}: keep the two together`
        : opensWithSecretKey
          ? "; its secrets open with INBOXD_SECRET_KEY: keep that setting with it"
          : keyNotGiven
            ? "; its secrets are sealed with a key this command was not given (no INBOXD_SECRET_KEY that opens them, no secret.key in the data dir): keep the INBOXD_SECRET_KEY the server runs with beside it, as restore needs it"
            : "";
      process.stdout.write(`backed up ${resolve(config.dataDir, "inboxd.db")} to ${resolve(file)} (${megabytes(bytes)})${key}\n`);
      return 0;
    },
  },
  restore: {
    usage: "inboxd restore FILE [--force]",
    operands: 1,
    ownSwitches: ["--force"],
    summary: "put a backup in place of the database of a stopped installation",
    details: "Refuses while inboxd runs on the data dir, and over an existing database without --force. FILE.key, written by backup beside FILE, becomes the data dir's secret.key (unless INBOXD_SECRET_KEY is set, which must then be the key FILE was made with).",
    async run(config, [file], flags) {
      if (!file) throw new ConfigError("restore: name the backup to restore (inboxd restore FILE)");
      if (config.databaseUrl) throw new ConfigError(onPostgres("restore"));
      const { messages, keyFile } = restoreDatabase(config.dataDir, resolve(file), flags["--force"] === "1", config.secretKey);
      const key = keyFile ? `, with its key ${keyFile} as ${resolve(config.dataDir, "secret.key")}` : "";
      process.stdout.write(`restored ${resolve(file)} (${messages} message${messages === 1 ? "" : "s"}) to ${resolve(config.dataDir, "inboxd.db")}${key}; start inboxd to use it\n`);
      return 0;
    },
  },
  db: {
    usage: "inboxd db copy --to postgres://USER:PASSWORD@HOST:PORT/DATABASE | --to sqlite:DATA_DIR",
    summary: "copy this stopped installation's database into an empty PostgreSQL database or a new data dir",
    details: "Reads the database INBOXD_DATA_DIR (or INBOXD_DATABASE_URL) names, writes every row into the empty target, then compares each table's row count and checksum on both sides; exit code 1 on any difference. Progress goes to stderr: a bar with rows per second on a terminal, plain lines otherwise.",
    ownFlags: ["--to"],
    operands: 1,
    async run(config, [action], flags) {
      if (action !== "copy") throw new ConfigError("db: the one action is copy (inboxd db copy --to TARGET)");
      const { carryOverSecretKey, parseCopyTarget, sourceEndpoint, targetEndpoint } = await import("./store/copy-endpoints");
      const { copyDatabase, copyProgress } = await import("./store/copy");
      const target = parseCopyTarget(flags["--to"]);
      const now = Date.now();
      const from = await sourceEndpoint(config, now);
      try {
        const to = await targetEndpoint(config, target, now);
        try {
          const tables = await copyDatabase(from, to, copyProgress());
          const rows = tables.reduce((sum, table) => sum + table.rows, 0);
          const key = carryOverSecretKey(config, target);
          const leftOut = tables.flatMap((table) => table.leftOut.map((column) => `${table.table}.${column}`));
          process.stdout.write(`copied ${rows} rows in ${tables.length} tables from ${from.description} to ${to.description}; row counts and checksums agree${key ? `; ${key}` : ""}\n`);
          if (leftOut.length) process.stdout.write(`not copied, as the source engine's own bookkeeping: ${leftOut.join(", ")}\n`);
        } finally {
          await to.close();
        }
      } finally {
        await from.close();
      }
      return 0;
    },
  },
  mcp: {
    usage: "inboxd mcp [--url URL] [--api-key KEY]",
    summary: "an MCP server on stdin and stdout, for AI agents on this machine; its tools call a running inboxd",
    details: "Speaks the Model Context Protocol over stdio until stdin closes; every tool is a call of the API at INBOXD_URL with INBOXD_API_KEY (docs/mcp.md). Nothing but MCP messages goes to stdout.",
    async run(config) {
      if (!config.apiKey) throw new ConfigError("INBOXD_API_KEY: inboxd mcp needs an API key of the organization (ik_...)");
      const { serveMcpOverStdio } = await import("./mcp/server");
      await serveMcpOverStdio(apiCaller(fetch, config.url, config.apiKey));
      return 0;
    },
  },
};

async function printVersion(): Promise<number> {
  process.stdout.write(`inboxd ${version}\n`);
  return 0;
}

function help(): string {
  const list = Object.entries(commands).map(([name, command]) => `  ${name.padEnd(10)} ${command.summary}`).join("\n");
  return `inboxd ${version}: a self-hosted mail appliance in one executable\n\nUsage: inboxd [command] [--flag value ...]   (inboxd <command> --help for one)\n\nCommands:\n${list}\n\nSettings (environment variable, default, meaning; each also a flag, e.g. --http-port 8006):\n  INBOXD_CONFIG                            (unset)      optional file of KEY=VALUE lines\n${settingsHelp()}\n`;
}

const commandHelp = (name: string, command: Command) => `Usage: ${command.usage}\n\n${name}: ${command.summary}.\n${command.details}\nSettings: see inboxd --help.\n`;

async function main(argv: string[]): Promise<number> {
  const { flags, positional } = parseFlags(argv, Object.values(commands).flatMap((command) => command.ownFlags ?? []));
  const name = positional[0] ?? "serve";
  if (name === "-h" || name === "help" || (flags["--help"] && positional.length === 0)) {
    process.stdout.write(help());
    return 0;
  }
  if (flags["--version"]) return printVersion();
  const command = commands[name];
  if (!command) throw new ConfigError(`unknown command '${name}' (see inboxd --help)`);
  if (flags["--help"]) {
    process.stdout.write(commandHelp(name, command));
    return 0;
  }
  const extra = positional[1 + (command.operands ?? 0)];
  if (extra !== undefined) throw new ConfigError(`${name}: unexpected argument '${extra}' (usage: ${command.usage})`);
  const misplaced = Object.keys(flags).find((flag) => switches.includes(flag) && !["--help", "--version"].includes(flag) && !command.ownSwitches?.includes(flag));
  if (misplaced) throw new ConfigError(`${misplaced}: inboxd ${name} takes no such flag (usage: ${command.usage})`);
  const settingFlags = Object.fromEntries(Object.entries(flags).filter(([flag]) => !command.ownFlags?.includes(flag)));
  const config = loadConfig(process.env, settingFlags);
  return command.run(config, positional.slice(1), flags);
}

async function serve(config: Config, _args: string[], flags: Record<string, string>): Promise<number> {
  await checkBeforeStart(config);
  const app = await openApp(config, { stopOnFailedSync: true });
  // With the flags: a file given with --config is checked as one given with INBOXD_CONFIG.
  for (const warning of configWarnings(config, process.env, flags)) app.log.warn(warning);
  // Taken before anything starts: a stop asked for during the start (systemd stopping the unit
  // at once) comes once the start is done, instead of the signal's default, an exit mid-start.
  const stopAsked = new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      app.log.info("shutting down", { signal });
      resolve();
    };
    process.once("SIGTERM", () => shutdown("SIGTERM"));
    process.once("SIGINT", () => shutdown("SIGINT"));
  });
  // Its default ends the process at once, without the drain; systemd holds such an end clean and
  // does not restart the unit. Daemons take it as "reload", and logrotate sends it.
  process.on("SIGHUP", () => app.log.warn("SIGHUP ignored: settings are read at start; restart inboxd to apply a change", { signal: "SIGHUP" }));
  const running = await keptAlive(() => startServices(app));
  // A stray error in one connection's callback must not end every other connection and queue:
  // logged, and the server keeps serving (start-up failures above still stop it).
  process.on("uncaughtException", (error) => app.log.error("uncaught exception; still serving", { error }));
  process.on("unhandledRejection", (error) => app.log.error("unhandled rejection; still serving", { error }));
  // What ran only to start (migrations, building the routes, the modules' set-up) is not needed
  // again: JavaScriptCore drops its compiled code (a later call compiles it again) and returns the
  // start's garbage, about 5 MB of the idle server's memory (docs/benchmarks.md, "Memory").
  // Deprecated in bun-types, yet the one call that reaches the engine's footprint shrink:
  // Bun.gc(true) freed nothing measurable here.
  Bun.shrink();
  await stopAsked;
  await keptAlive(() => running.stop());
  app.close();
  app.log.info("stopped");
  return 0;
}

/**
 * Runs `work` with the process kept alive. Worker threads do not keep it alive: while the
 * listeners are closed (a stop, or a start that failed stopping what it had started), a part
 * still finishing (a checkpoint on its thread) would see the process end under it, with exit 0,
 * no line said, and the rest undone.
 */
async function keptAlive<T>(work: () => Promise<T>): Promise<T> {
  const keepAlive = setInterval(() => {}, 60_000);
  try {
    return await work();
  } finally {
    clearInterval(keepAlive);
  }
}

/** backup and restore are of the embedded database: PostgreSQL has its own tools. */
const onPostgres = (command: string) =>
  `${command}: INBOXD_DATABASE_URL is set, and ${command} is of the embedded SQLite database: back up PostgreSQL with its own tools (pg_dump and pg_restore, or your provider's snapshots), or move to a data dir with inboxd db copy --to sqlite:DATA_DIR`;

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** A progress bar on a terminal; on anything else, a plain line every 10 %. */
function progressReporter(file: string) {
  const terminal = process.stderr.isTTY;
  let lastTenth = -1;
  let drawn = false;
  const report = (written: number, estimate: number) => {
    const fraction = estimate > 0 ? Math.min(1, written / estimate) : 1;
    if (terminal) {
      const width = 30;
      const filled = Math.round(fraction * width);
      process.stderr.write(`\r[${"#".repeat(filled)}${" ".repeat(width - filled)}] ${Math.round(fraction * 100)}% ${megabytes(written)} to ${file}`);
      drawn = true;
    } else if (Math.floor(fraction * 10) > lastTenth) {
      lastTenth = Math.floor(fraction * 10);
      process.stderr.write(`backup: ${megabytes(written)} of about ${megabytes(estimate)}\n`);
    }
  };
  return Object.assign(report, { finish: () => drawn && process.stderr.write("\n") });
}

main(process.argv.slice(2)).then(exitOnceWritten, (error) => {
  // One line, naming the setting at fault; exit 2 so that systemd does not restart into it again.
  if (error instanceof ConfigError) process.stderr.write(`inboxd: ${error.message}\n`);
  else if (error instanceof StoreInUseError) process.stderr.write(`inboxd: ${error.message}\n`);
  else process.stderr.write(`inboxd: ${error instanceof Error ? error.message : String(error)}${process.env.INBOXD_LOG_LEVEL === "debug" && error instanceof Error ? `\n${error.stack}` : ""}\n`);
  exitOnceWritten(error instanceof ConfigError || error instanceof StoreInUseError ? 2 : 1);
});
