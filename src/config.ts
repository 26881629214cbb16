/**
 * The typed configuration: every INBOXD_* setting with its default, read once.
 * Precedence: flags > environment > config file (KEY=VALUE lines) > defaults.
 */
import { availableParallelism, hostname as osHostname, totalmem } from "node:os";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { closest, distance } from "fastest-levenshtein";
import ipaddr from "ipaddr.js";
import { isValidDomainName } from "./mail/address";
import { parseSecretKey } from "./store/secret-box";

export class ConfigError extends Error {}

/** A listener that cannot be opened, said in the words of the setting that chose it. */
export function listenError(error: unknown, setting: string, host: string, port: number): Error {
  const code = (error as { code?: string }).code;
  if (code === "EADDRINUSE") return new ConfigError(`${setting}: port ${port} on ${host} is in use by another process`);
  if (code === "EACCES" || code === "EPERM") return new ConfigError(`${setting}: this user may not listen on port ${port} (below 1024 needs root or CAP_NET_BIND_SERVICE)`);
  if (code === "EADDRNOTAVAIL") return new ConfigError(`INBOXD_BIND: ${host} is not an address of this machine`);
  return error instanceof Error ? error : new Error(String(error));
}

type Parser<T> = (raw: string, name: string) => T;

/**
 * A URL's password left out of what is said (`//user:***@host`): errors go to the journal. The
 * password runs to the last `@` before the query: a user or password with an `@` not written
 * `%40` (a relay's user is often an address) still parses, and its error is where the value is
 * echoed. After `scheme:/` or `scheme://` it starts at the user's colon; with no slash (a scheme
 * mistyped, or none: `user:password@host`) at the first colon, which may be the scheme's: all
 * after it is hidden either way. Quotes or a space before the scheme change nothing.
 */
export function withoutPassword(text: string): string {
  const scheme = /^\W*[a-z][a-z0-9+.-]*:\/+/i.exec(text)?.[0] ?? "";
  const query = text.slice(scheme.length).search(/[?#]/);
  const at = text.lastIndexOf("@", query === -1 ? text.length : scheme.length + query);
  const colon = text.indexOf(":", scheme.length);
  return at !== -1 && colon !== -1 && colon < at ? `${text.slice(0, colon)}:***${text.slice(at)}` : text;
}

const fail = (name: string, raw: string, expected: string): never => {
  throw new ConfigError(`${name}: '${withoutPassword(raw)}' is not ${expected}`);
};

const port: Parser<number> = (raw, name) => {
  const n = Number(raw);
  return /^\d+$/.test(raw) && n <= 65535 ? n : fail(name, raw, "a port (0-65535)");
};
const nonNegativeInt: Parser<number> = (raw, name) =>
  /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : fail(name, raw, "a whole number >= 0");
const positiveInt: Parser<number> = (raw, name) => {
  const n = nonNegativeInt(raw, name);
  return n > 0 ? n : fail(name, raw, "a whole number > 0");
};
const atMost = (parse: Parser<number>, max: number, why: string): Parser<number> => (raw, name) => {
  const n = parse(raw, name);
  return n <= max ? n : fail(name, raw, `at most ${max} (${why})`);
};
/** The longest a timer waits (2^31 - 1 ms): past it the runtime fires it at once, so a 30-day timeout would be 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;
const durationMs = atMost(positiveInt, MAX_TIMER_MS, "24.8 days, the longest a timer waits");
const delayMs = atMost(nonNegativeInt, MAX_TIMER_MS, "24.8 days, the longest a timer waits");
/** A port to connect to: 0 names none. */
const remotePort: Parser<number> = (raw, name) => {
  const n = Number(raw);
  return /^\d+$/.test(raw) && n >= 1 && n <= 65535 ? n : fail(name, raw, "a port (1-65535)");
};
const bool: Parser<boolean> = (raw, name) => {
  const v = raw.toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off", ""].includes(v)) return false;
  return fail(name, raw, "a boolean (0 or 1)");
};
const text: Parser<string> = (raw) => raw;
/** A bearer token as a client sends it (RFC 6750 §2.1): one run of characters without spaces. */
const bearerTokenSetting: Parser<string> = (raw, name) => {
  if (raw === "" || /^\S+$/.test(raw.trim())) return raw.trim();
  // Not repeated: it is a secret.
  throw new ConfigError(`${name}: the value is not a token without spaces (as a client sends it after "Bearer ")`);
};
const nonEmptyText: Parser<string> = (raw, name) => (raw.trim() ? raw.trim() : fail(name, raw, "a non-empty value"));
/** The entries of a comma-separated list, trimmed, empty ones left out. */
const commaList = (raw: string) => raw.split(",").map((s) => s.trim()).filter(Boolean);
/** A retry schedule: no delay over 30 days (RFC 5321 §4.5.4.1 gives up after 4-5 days in all). */
const MAX_RETRY_DELAY_SECONDS = 30 * 24 * 60 * 60;
const secondsList: Parser<number[]> = (raw, name) => {
  const parts = raw.split(",").map((s) => s.trim());
  if (!parts.every((p) => /^\d+(\.\d+)?$/.test(p) && Number(p) <= MAX_RETRY_DELAY_SECONDS)) fail(name, raw, `a comma-separated list of seconds, each at most ${MAX_RETRY_DELAY_SECONDS} (30 days)`);
  return parts.map(Number);
};
const hostPortList: Parser<string[]> = (raw, name) => {
  const list = commaList(raw);
  for (const entry of list) {
    const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(entry);
    const portNumber = match?.[2] === undefined ? 53 : Number(match[2]);
    if (!match || portNumber < 1 || portNumber > 65535) fail(name, raw, "a list of host:port (port 1-65535)");
  }
  return list;
};
const ipList: Parser<string[]> = (raw, name) => {
  const list = commaList(raw);
  return list.every((entry) => isIP(entry)) ? list : fail(name, raw, "a comma-separated list of IP addresses");
};
const ipOrCidrList: Parser<string[]> = (raw, name) => {
  const list = commaList(raw);
  return list.every((entry) => (entry.includes("/") ? ipaddr.isValidCIDR(entry) : ipaddr.isValid(entry))) ? list : fail(name, raw, "a comma-separated list of IP addresses and CIDR ranges");
};
const httpsUrl: Parser<string> = (raw, name) => (URL.canParse(raw) && new URL(raw).protocol === "https:" ? raw : fail(name, raw, "an https:// URL"));
const ipAddress: Parser<string> = (raw, name) => (isIP(raw) ? raw : fail(name, raw, "an IP address (0.0.0.0 or :: for every address)"));
// RFC 1123 §2.1 host names, RFC 1035 §2.3.4 lengths: letters, digits and hyphens, 1-63 per label, 253 in all.
const DOMAIN_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;
/**
 * A domain name mail can be addressed to (isValidDomainName: never of an IP address's form, RFC
 * 1123 §2.1), or a single label: a machine's name, the default, which is warned about.
 */
const isDomainName = (value: string) => (value.includes(".") ? isValidDomainName(value) : DOMAIN_LABEL.test(value));
const domainName: Parser<string> = (raw, name) => {
  const value = raw.trim().replace(/\.$/, "");
  return isDomainName(value) ? value : fail(name, raw, "a domain name (letters, digits, hyphens and dots; an IP address is none)");
};
/** RFC 5905 §7.2: NTP's port, INBOXD_DOCTOR_NTP_SERVER's unless it names another. */
export const NTP_PORT = 123;
/** host[:port], [IPv6]:port or a bare IPv6 address: a domain name or an IP address, and a port from 1 to 65535 if any. */
const serverAddress = (defaultPort: number): Parser<string> => (raw, name) => {
  const value = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(value);
  const plain = /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(value);
  const [host, port] = bracketed ? [bracketed[1]!, bracketed[2]] : isIP(value) === 6 ? [value, undefined] : plain ? [plain[1]!, plain[2]] : [undefined, undefined];
  const portNumber = Number(port ?? defaultPort);
  const hostUsable = host !== undefined && (bracketed ? isIP(host) === 6 : isIP(host) !== 0 || isDomainName(host.replace(/\.$/, "")));
  const usable = hostUsable && portNumber >= 1 && portNumber <= 65535;
  return usable ? value : fail(name, raw, "a host name or IP address, with a port from 1 to 65535 if any (e.g. pool.ntp.org or [2001:db8::1]:123)");
};
const optionalUrl: Parser<string | undefined> = (raw, name) => {
  if (!raw) return undefined;
  try {
    const url = new URL(raw);
    if ((url.protocol !== "smtp:" && url.protocol !== "smtps:") || !url.hostname || url.port === "0") throw new Error();
    // The user and password are read percent-decoded (RFC 3986 §2.1): a bare % stopped the start later, unnamed.
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    return raw;
  } catch {
    return fail(name, raw, "an smtp:// or smtps:// URL with a host (and a port from 1 to 65535, if any; a % in the user or password written %25)");
  }
};
const optionalHostPort: Parser<{ host: string; port: number } | undefined> = (raw, name) => {
  if (!raw) return undefined;
  const match = /^(\[[0-9a-fA-F:.]+\]|[0-9.]+):(\d{1,5})$/.exec(raw);
  const host = match?.[1].replace(/^\[|\]$/g, "");
  return match && isIP(host!) && Number(match[2]) <= 65535 ? { host: host!, port: Number(match[2]) } : fail(name, raw, "an IP address and port (e.g. 127.0.0.1:9106)");
};
const oneOf = <T extends string>(...values: T[]): Parser<T> => (raw, name) =>
  (values as string[]).includes(raw) ? (raw as T) : fail(name, raw, `one of ${values.join(", ")}`);
/** libpq's modes, which the driver takes; another fails only at the first connection, naming no setting. */
const sslModes = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];
const postgresUrl: Parser<string> = (raw, name) => {
  if (!/^postgres(ql)?:\/\//.test(raw) || !URL.canParse(raw)) return fail(name, raw, "a postgres:// URL");
  const url = new URL(raw);
  // Each stopped the start later, naming no setting, and not as a setting's failure (exit 1: systemd restarted it).
  if (url.port === "0") return fail(name, raw, "a postgres:// URL with a port from 1 to 65535, if any");
  try {
    for (const part of [url.username, url.password, url.pathname]) decodeURIComponent(part);
  } catch {
    return fail(name, raw, "a postgres:// URL whose user, password and database are percent-encoded (a % written %25)");
  }
  const sslMode = url.searchParams.get("sslmode");
  return sslMode === null || sslModes.includes(sslMode) ? raw : fail(name, raw, `a postgres:// URL whose sslmode is one of ${sslModes.join(", ")}`);
};
const apiUrl: Parser<string> = (raw, name) => (URL.canParse(raw) && ["http:", "https:"].includes(new URL(raw).protocol) ? raw : fail(name, raw, "an http:// or https:// URL"));

interface Setting<T> {
  env: string;
  default: string;
  parse: Parser<T>;
  help: string;
}
const setting = <T>(env: string, def: string, parse: Parser<T>, help: string): Setting<T> => ({ env, default: def, parse, help });

const machineName = osHostname() || "localhost";

/**
 * One analysis thread per core but one, at least one, at most 4: the event loop keeps a core. On
 * two cores one thread analyses more mail than two (bench/smtp-ingest/catch-up.ts, five pairs:
 * 395 against 357 msg/s from the first message to the last stored, and 966-1,340 against 698-888
 * accepted): with the event loop, two analysis threads and their collectors on two cores, each
 * message cost the analysis 2.2-2.4 ms of CPU instead of 1.4-1.9, and the heap and code of the
 * second thread held 25-30 MB more under load.
 */
const defaultSmtpWorkers = (cores: number) => Math.min(4, Math.max(1, cores - 1));
const MAX_SMTP_WORKERS = 64;
/** SQLite reads `PRAGMA cache_size = -KiB` as a 32-bit number: a larger cache overflowed to none. */
const MAX_DB_CACHE_MB = 2_097_151;
/**
 * Reserved on the service domain whatever INBOXD_RESERVED_LOCAL_PARTS says, which adds to them:
 * postmaster (RFC 5321 §4.5.1), abuse (RFC 2142 §4), and the names certificate authorities mail to
 * prove control of a domain (CA/Browser Forum Baseline Requirements §3.2.2.4.4). A list that
 * replaced them let the first organization to ask take them.
 */
const ALWAYS_RESERVED_LOCAL_PARTS = ["postmaster", "abuse", "hostmaster", "webmaster", "admin", "administrator"];
const reservedLocalParts: Parser<string[]> = (raw, name) => {
  const list = commaList(raw.toLowerCase());
  if (!list.every((local) => /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/.test(local))) fail(name, raw, "a comma-separated list of local parts (letters, digits, hyphens, underscores, inner dots)");
  return [...new Set([...list, ...ALWAYS_RESERVED_LOCAL_PARTS])];
};

/** The memory this process may use: the machine's, or less where a cgroup limits it (systemd's MemoryMax, a container). */
export function memoryForThisProcess(): number {
  const limit = process.constrainedMemory();
  return limit > 0 && limit < totalmem() ? limit : totalmem();
}

/**
 * SQLite's page cache in MiB, sized to the memory there is: 1/256 of it, at least 2 (SQLite's own
 * default), at most 16. On a 1 GB VPS 4 MiB; from 4 GB on, 16. The cache is resident memory of the
 * process and fills within minutes of steady mail (each stored message's pages go through it), so
 * on a small host it is a part of the process's size that buys the least (docs/benchmarks.md,
 * "Memory under load").
 */
export const defaultDbCacheMb = (memoryBytes: number) => Math.min(16, Math.max(2, Math.floor(memoryBytes / (256 * 1024 * 1024))));

export const settings = {
  httpPort: setting("INBOXD_HTTP_PORT", "8006", port, "HTTP API port (0: any free port)"),
  smtpPort: setting("INBOXD_SMTP_PORT", "25", port, "inbound SMTP port; falls back to 2525 where 25 may not be bound (0: any free port)"),
  bind: setting("INBOXD_BIND", "0.0.0.0", ipAddress, "address both servers listen on"),
  dataDir: setting("INBOXD_DATA_DIR", "./data", nonEmptyText, "the SQLite database and keys"),
  databaseUrl: setting("INBOXD_DATABASE_URL", "", (raw, name) => (raw.trim() === "" ? undefined : postgresUrl(raw, name)), "PostgreSQL database shared by every node, postgres://user:password@host:port/database (sslmode and sslrootcert honoured); empty: the embedded SQLite in INBOXD_DATA_DIR"),
  mailDomain: setting("INBOXD_MAIL_DOMAIN", machineName, domainName, "the service's own mail domain"),
  hostname: setting("INBOXD_HOSTNAME", machineName, domainName, "name in the SMTP greeting and EHLO, MX target"),
  env: setting("INBOXD_ENV", "production", nonEmptyText, "reported by /health as environment"),
  dnsServers: setting("INBOXD_DNS_SERVERS", "", hostPortList, "host:port list for every DNS look-up (empty: system resolver)"),
  publicIps: setting("INBOXD_PUBLIC_IPS", "", ipList, "this server's public addresses, for custom domains' SPF (empty: the A/AAAA records of INBOXD_HOSTNAME)"),
  doctorProbeDomain: setting("INBOXD_DOCTOR_PROBE_DOMAIN", "gmail.com", domainName, "`inboxd doctor`: the domain whose MX the outbound port 25 check connects to"),
  doctorNtpServer: setting("INBOXD_DOCTOR_NTP_SERVER", "pool.ntp.org", serverAddress(NTP_PORT), "`inboxd doctor`: the NTP server (host[:port]) the clock is compared with"),
  outboundPort: setting("INBOXD_OUTBOUND_PORT", "25", remotePort, "port used when delivering to an MX host"),
  outboundAllowPrivate: setting("INBOXD_OUTBOUND_ALLOW_PRIVATE", "0", bool, "deliver to MX hosts on private, loopback, link-local or reserved addresses (private networks, tests); the relay is always allowed"),
  smtpRelay: setting("INBOXD_SMTP_RELAY", "", optionalUrl, "smtp(s)://user:pass@host:port: send everything through this relay"),
  deliveryRetryDelays: setting("INBOXD_DELIVERY_RETRY_DELAYS", "300,900,1800,3600,7200,14400,28800,57600,86400,86400,86400", secondsList, "seconds between outbound delivery tries; after the last the recipient bounces"),
  deliveryConcurrency: setting("INBOXD_DELIVERY_CONCURRENCY", "16", positiveInt, "outbound SMTP connections at once"),
  deliveryConcurrencyPerDomain: setting("INBOXD_DELIVERY_CONCURRENCY_PER_DOMAIN", "4", positiveInt, "outbound SMTP connections at once to one destination domain"),
  dkimRsaEngine: setting("INBOXD_DKIM_RSA", "auto", oneOf("auto", "builtin"), "who makes RSA DKIM signatures: the system's OpenSSL 3 where it loads and proves itself, else node:crypto (auto); node:crypto always (builtin)"),
  smtpClientTimeoutScale: setting("INBOXD_SMTP_CLIENT_TIMEOUT_SCALE", "1", (raw, name) => { const n = Number(raw); return n > 0 && n <= 1 ? n : fail(name, raw, "a factor in (0, 1]"); }, "multiplies the RFC 5321 §4.5.3.2 client timeouts (tests shorten them)"),
  sendLimit: setting("INBOXD_SEND_LIMIT", "100", positiveInt, "sends and replies per hour per organization"),
  searchBudgetMs: setting("INBOXD_SEARCH_BUDGET_MS", "250", durationMs, "time one regular-expression search may run (in its slices, not counting the turns it waits for) before it answers 422"),
  searchConcurrencyPerOrg: setting("INBOXD_SEARCH_CONCURRENCY_PER_ORG", "4", positiveInt, "regular-expression (and 1-2 character) searches one organization may run at once before 429; words and phrases are not counted"),
  webhookRetryDelays: setting("INBOXD_WEBHOOK_RETRY_DELAYS", "60,300,1800,7200", secondsList, "seconds between webhook tries"),
  webhookTimeoutMs: setting("INBOXD_WEBHOOK_TIMEOUT_MS", "5000", durationMs, "timeout of one webhook try"),
  webhookAllowPrivate: setting("INBOXD_WEBHOOK_ALLOW_PRIVATE", "0", bool, "allow http and private/loopback webhook targets (development, tests)"),
  webhookConcurrency: setting("INBOXD_WEBHOOK_CONCURRENCY", "64", positiveInt, "webhook requests in flight at once"),
  webhookConcurrencyPerUrl: setting("INBOXD_WEBHOOK_CONCURRENCY_PER_URL", "4", positiveInt, "webhook requests in flight at once to one URL"),
  eventRetentionDays: setting("INBOXD_EVENT_RETENTION_DAYS", "7", positiveInt, "days events are kept for GET /v1/events to resume from (events with webhook deliveries still pending stay longer)"),
  eventStreamsPerOrg: setting("INBOXD_EVENT_STREAMS_PER_ORG", "10", positiveInt, "GET /v1/events streams one organization may hold open at once before 429"),
  eventHeartbeatMs: setting("INBOXD_EVENT_HEARTBEAT_MS", "15000", durationMs, "how long an event stream may stay silent before it sends a `: ping` comment (keeps proxies from closing it)"),
  smtpMaxSize: setting("INBOXD_SMTP_MAX_SIZE", String(25 * 1024 * 1024), positiveInt, "largest inbound message in bytes (advertised as SIZE)"),
  smtpMaxConnections: setting("INBOXD_SMTP_MAX_CONNECTIONS", "200", positiveInt, "inbound SMTP connections at once"),
  smtpMaxConnectionsPerIp: setting("INBOXD_SMTP_MAX_CONNECTIONS_PER_IP", "20", positiveInt, "inbound SMTP connections at once from one address"),
  smtpGreetingDelayMs: setting("INBOXD_SMTP_GREETING_DELAY_MS", "100", delayMs, "wait before the SMTP greeting; clients that talk early are refused"),
  smtpIdleTimeoutMs: setting("INBOXD_SMTP_IDLE_TIMEOUT_MS", "300000", durationMs, "how long an inbound SMTP client may stay silent (RFC 5321 §4.5.3.2.7)"),
  smtpDataTimeoutMs: setting("INBOXD_SMTP_DATA_TIMEOUT_MS", "600000", durationMs, "how long an inbound message may take to arrive after DATA (slow clients)"),
  smtpCommandTimeoutMs: setting("INBOXD_SMTP_COMMAND_TIMEOUT_MS", "300000", durationMs, "how long one command line may take to arrive, however slowly its bytes trickle in (RFC 5321 §4.5.3.2)"),
  smtpSessionTimeoutMs: setting("INBOXD_SMTP_SESSION_TIMEOUT_MS", "1800000", durationMs, "how long one inbound SMTP connection may last in all; a message under way is answered first"),
  smtpMaxHeaderLines: setting("INBOXD_SMTP_MAX_HEADER_LINES", "2000", positiveInt, "lines (folded continuations included) in the header of an inbound message; more is refused with 552"),
  smtpAnalysisTimeoutMs: setting("INBOXD_SMTP_ANALYSIS_TIMEOUT_MS", "30000", durationMs, "how long parsing and authenticating one inbound message may take before its thread is replaced and it is analysed again later (451 with INBOXD_DMARC_ENFORCE); a third of it bounds the message's DNS look-ups"),
  messageMemoryMb: setting("INBOXD_MESSAGE_MEMORY_MB", "32", positiveInt, "MiB of message data received, analysed and stored at once (SMTP and HTTP together); above it SMTP answers 452 and HTTP 503, try later"),
  dbCacheMb: setting("INBOXD_DB_CACHE_MB", String(defaultDbCacheMb(memoryForThisProcess())), atMost(positiveInt, MAX_DB_CACHE_MB, "SQLite's cache_size is a 32-bit count of KiB"), "MiB of SQLite page cache: resident memory that keeps indexes in memory (default: 1/256 of the memory there is, 2 to 16); raise it for large mailboxes on hosts with memory to spare"),
  smtpWorkers: setting("INBOXD_SMTP_WORKERS", String(defaultSmtpWorkers(availableParallelism())), atMost(nonNegativeInt, MAX_SMTP_WORKERS, "each thread holds a heap of its own, 25-40 MB"), "threads that parse and authenticate inbound mail, beside the main thread (0: on the main thread)"),
  tlsCert: setting("INBOXD_TLS_CERT", "", text, "PEM certificate for STARTTLS (empty: self-signed, generated once into the data dir)"),
  tlsKey: setting("INBOXD_TLS_KEY", "", text, "PEM private key for STARTTLS"),
  apiHostname: setting("INBOXD_API_HOSTNAME", "", (raw, name) => (raw.trim() ? domainName(raw, name) : undefined), "host name of the API and console over HTTPS, when not INBOXD_HOSTNAME (its certificate comes from ACME too)"),
  acmeEmail: setting("INBOXD_ACME_EMAIL", "", (raw, name) => { const email = raw.trim(); return !email || /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) ? email || undefined : fail(name, raw, "an email address"); }, "contact address of the ACME account; set, inboxd obtains and renews its certificates itself (empty: no ACME)"),
  acmeDirectory: setting("INBOXD_ACME_DIRECTORY", "https://acme-v02.api.letsencrypt.org/directory", httpsUrl, "the ACME directory URL (Let's Encrypt's production one by default)"),
  acmeCaFile: setting("INBOXD_ACME_CA_FILE", "", text, "PEM file of the CA that signed the ACME directory's own HTTPS certificate, for a private ACME server (empty: the system's CAs)"),
  acmeHttpPort: setting("INBOXD_ACME_HTTP_PORT", "80", port, "with ACME: the plain HTTP port that answers HTTP-01 challenges and redirects everything else to HTTPS (0: any free port)"),
  httpsPort: setting("INBOXD_HTTPS_PORT", "", (raw, name) => (raw === "" ? undefined : port(raw, name)), "HTTPS port of the API and console (empty: 443 with ACME, else no HTTPS)"),
  mtaStsMode: setting("INBOXD_MTA_STS_MODE", "testing", oneOf("testing", "enforce", "none"), "mode of the MTA-STS policy served for the service domain and the custom domains whose MX is verified (RFC 8461)"),
  mtaStsPolicyPort: setting("INBOXD_MTA_STS_POLICY_PORT", "443", remotePort, "port of recipient domains' MTA-STS policy hosts (tests change it)"),
  outboundCaFile: setting("INBOXD_OUTBOUND_CA_FILE", "", text, "PEM file of CAs trusted beside the system's for recipients' MX certificates and MTA-STS policy hosts (private networks, tests)"),
  // Unlike the other settings, a wrong value is not repeated in the error: it is a secret.
  secretKey: setting("INBOXD_SECRET_KEY", "", (raw, name) => { if (raw === "") return undefined; const key = parseSecretKey(raw); if (!key) throw new ConfigError(`${name}: the value is not 32 bytes in base64 or hex (make one with: openssl rand -base64 32)`); return key; }, "key that seals webhook secrets and DKIM private keys in the database, base64 or hex of 32 bytes (empty: the data dir's secret.key, made at first start)"),
  dmarcEnforce: setting("INBOXD_DMARC_ENFORCE", "0", bool, "refuse inbound mail failing DMARC with p=reject (550 5.7.1); inbound mail is then analysed before its 250, not after"),
  reservedLocalParts: setting("INBOXD_RESERVED_LOCAL_PARTS", "postmaster,abuse,noc,security,hostmaster,webmaster,www,admin,administrator,root,mailer-daemon,noreply,no-reply,dmarc", reservedLocalParts, "local parts no organization may create on the service mail domain, besides postmaster, abuse, hostmaster, webmaster, admin and administrator, which always are (RFC 2142 role names, the CA/Browser Forum's domain-validation names); their mail goes to INBOXD_POSTMASTER_INBOX"),
  postmasterInbox: setting("INBOXD_POSTMASTER_INBOX", "", (raw, name) => { const address = raw.trim().toLowerCase(); return !address || /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/.test(address) ? address : fail(name, raw, "an inbox address such as ops@example.com"); }, "address of the operator's inbox that receives mail for postmaster and the reserved local parts (empty: that mail is refused with 550)"),
  loginMaxFailures: setting("INBOXD_LOGIN_MAX_FAILURES", "10", positiveInt, "failed logins per email or IP within a minute before 429"),
  loginLockoutSeconds: setting("INBOXD_LOGIN_LOCKOUT_SECONDS", "300", positiveInt, "how long logins stay refused after too many failures"),
  trustedProxies: setting("INBOXD_TRUSTED_PROXIES", "", ipOrCidrList, "reverse proxies (IPs, CIDRs) whose X-Forwarded-For names the client, for the per-address limits (and whose X-Forwarded-Proto/-Host, the lists' Link URLs)"),
  registerLimit: setting("INBOXD_REGISTER_LIMIT", "20", positiveInt, "registrations per client address per hour before 429"),
  shutdownTimeoutMs: setting("INBOXD_SHUTDOWN_TIMEOUT_MS", "10000", durationMs, "how long shutdown waits for in-flight work, in all"),
  metricsToken: setting("INBOXD_METRICS_TOKEN", "", bearerTokenSetting, "bearer token that GET /metrics on the API port requires (empty: no /metrics there)"),
  metricsBind: setting("INBOXD_METRICS_BIND", "", optionalHostPort, "host:port of a separate listener for GET /metrics, without a token (e.g. 127.0.0.1:9106)"),
  logFormat: setting("INBOXD_LOG_FORMAT", "text", oneOf("text", "json"), "log lines as text or JSON"),
  logLevel: setting("INBOXD_LOG_LEVEL", "info", oneOf("debug", "info", "warn", "error", "silent"), "lowest level logged"),
  // Settings of `inboxd mcp`, a client of a running inboxd (the server itself reads neither).
  url: setting("INBOXD_URL", "http://127.0.0.1:8006", apiUrl, "`inboxd mcp`: the API of the running inboxd its tools call"),
  apiKey: setting("INBOXD_API_KEY", "", text, "`inboxd mcp`: the organization's API key (ik_...) its tools call the API with"),
};

type Settings = typeof settings;
export type Config = { [K in keyof Settings]: Settings[K] extends Setting<infer T> ? T : never };

/** `--http-port 8006` or `--http-port=8006` for INBOXD_HTTP_PORT. */
export const flagName = (env: string) => "--" + env.replace(/^INBOXD_/, "").toLowerCase().replaceAll("_", "-");

function readConfigFile(path: string): Record<string, string> {
  let content: string;
  try {
    content = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`INBOXD_CONFIG: cannot read ${path}: ${(e as Error).message}`);
  }
  const values: Record<string, string> = {};
  for (const [index, line] of content.split(/\r?\n/).entries()) {
    const trimmed = line.trim();
    // systemd.exec(5), EnvironmentFile=: lines starting with # or ; are comments.
    if (!trimmed || trimmed.startsWith("#") || trimmed.startsWith(";")) continue;
    // `export NAME=value`, as a shell file sourced elsewhere may say it.
    const setting = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/.exec(trimmed);
    // The line is not echoed: a mistyped one (`INBOXD_SECRET_KEY: ...`) holds its secret all the same.
    if (!setting) throw new ConfigError(`INBOXD_CONFIG: line ${index + 1} of ${path} is not KEY=VALUE (a key of letters, digits and _, then =)`);
    // A value in double or single quotes is what they hold, as systemd reads it.
    values[setting[1]!] = setting[2]!.trim().replace(/^"(.*)"$|^'(.*)'$/, "$1$2");
  }
  return values;
}

/** Flags that stand alone; every other flag names a setting and needs a value. */
export const switches = ["--help", "--version", "--force"];

/** Splits `--name value` / `--name=value` flags off the arguments; the rest are positional. `commandFlags`: flags with a value that commands take besides the settings'. */
export function parseFlags(args: string[], commandFlags: string[] = []): { flags: Record<string, string>; positional: string[] } {
  const flags: Record<string, string> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    if (eq > 0) flags[arg.slice(0, eq)] = arg.slice(eq + 1);
    else if (switches.includes(arg)) flags[arg] = "1";
    // `--http-port` at the end, or before another flag, has no value: refused (it once bound port 1).
    else if (args[i + 1] === undefined || args[i + 1]!.startsWith("--")) {
      refuseUnknownFlag(arg, [...settingFlags(), ...switches, ...commandFlags]);
      throw new ConfigError(`${arg}: needs a value (see inboxd --help)`);
    }
    else flags[arg] = args[++i]!;
  }
  return { flags, positional };
}

const settingFlags = () => Object.values(settings).map((s) => flagName(s.env)).concat(["--config"]);
const settingNames = () => Object.values(settings).map((s) => s.env).concat(["INBOXD_CONFIG"]);

/** " (did you mean X?)" when a known name is close to an unknown one. */
function suggestion(unknown: string, known: string[]): string {
  const nearest = closest(unknown, known);
  // A third of the name may differ: typos and swapped words, not unrelated names.
  return distance(unknown, nearest) <= Math.max(2, Math.floor(unknown.length / 3)) ? ` (did you mean ${nearest}?)` : "";
}

function refuseUnknownFlag(flag: string, known: string[]): void {
  if (!known.includes(flag)) throw new ConfigError(`${flag}: unknown flag${suggestion(flag, known)} (see inboxd --help)`);
}

export function loadConfig(env: Record<string, string | undefined> = process.env, flags: Record<string, string> = {}): Config {
  const known = settingFlags().concat(switches);
  for (const flag of Object.keys(flags)) refuseUnknownFlag(flag, known);
  const configPath = flags["--config"] ?? env.INBOXD_CONFIG;
  const file = configPath ? readConfigFile(configPath) : {};
  const config: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings) as [keyof Settings, Setting<unknown>][]) {
    const raw = flags[flagName(s.env)] ?? env[s.env] ?? file[s.env] ?? s.default;
    config[key] = s.parse(raw, s.env);
  }
  return config as Config;
}

/**
 * What deserves a word at start without stopping it: an INBOXD_* name in the environment that no
 * setting has, and any such name in the config file, whose every line is meant for inboxd (a typo
 * would leave its setting at the default unnoticed); and a host name that is not fully qualified.
 */
export function configWarnings(config: Config, env: Record<string, string | undefined> = process.env, flags: Record<string, string> = {}): string[] {
  const configPath = flags["--config"] ?? env.INBOXD_CONFIG;
  const file = configPath ? readConfigFile(configPath) : {};
  const known = settingNames();
  const unknown = [...new Set([...Object.keys(env).filter((name) => name.startsWith("INBOXD_")), ...Object.keys(file)])].filter((name) => !known.includes(name) && !OTHER_PROGRAMS_VARIABLES.includes(name));
  const warnings = unknown.sort().map((name) => `${name} is not a setting of inboxd and is ignored${suggestion(name.toUpperCase(), known)}`);
  if (!config.hostname.includes(".")) warnings.push(`INBOXD_HOSTNAME is '${config.hostname}', not a fully qualified name: receivers and TLS need one (e.g. mx.example.com)`);
  // Addresses in a one-label domain (bob@vm) are refused by receivers and by inboxd's own sends.
  if (!config.mailDomain.includes(".")) warnings.push(`INBOXD_MAIL_DOMAIN is '${config.mailDomain}', not a domain with a dot: inboxes there cannot send or receive mail (set e.g. example.com)`);
  return warnings;
}

// Read by the test suite, not by the server.
const OTHER_PROGRAMS_VARIABLES = ["INBOXD_TEST_LOG_LEVEL", "INBOXD_TEST_DATABASE_URL", "INBOXD_TEST_POSTGRES"];

export function settingsHelp(): string {
  return Object.values(settings)
    .map((s) => `  ${s.env.padEnd(40)} ${(s.default === "" ? "(unset)" : s.default).padEnd(12)} ${s.help}`)
    .join("\n");
}
