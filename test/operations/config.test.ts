// Settings at their edges: a value the server could not honour stops the start with a line naming
// the setting, rather than being taken and acting otherwise (a 30-day timeout firing at once).
import { afterAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, configWarnings, loadConfig } from "../../src/config";
import { relayFromUrl } from "../../src/outbound/relay";
import { tempDir } from "../harness";

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refused = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(env)}`);
};

describe("durations", () => {
  const timers = [
    "INBOXD_SEARCH_BUDGET_MS",
    "INBOXD_WEBHOOK_TIMEOUT_MS",
    "INBOXD_EVENT_HEARTBEAT_MS",
    "INBOXD_SMTP_IDLE_TIMEOUT_MS",
    "INBOXD_SMTP_DATA_TIMEOUT_MS",
    "INBOXD_SMTP_COMMAND_TIMEOUT_MS",
    "INBOXD_SMTP_SESSION_TIMEOUT_MS",
    "INBOXD_SMTP_ANALYSIS_TIMEOUT_MS",
    "INBOXD_SHUTDOWN_TIMEOUT_MS",
    "INBOXD_SMTP_GREETING_DELAY_MS",
  ];

  test.each(timers)("%s: 2147483647 ms (24.8 days) is taken, one more is refused with the reason", (name) => {
    expect(Object.values(loadConfig({ [name]: "2147483647" }))).toContain(2_147_483_647);
    expect(refused({ [name]: "2147483648" })).toBe(`${name}: '2147483648' is not at most 2147483647 (24.8 days, the longest a timer waits)`);
    expect(refused({ [name]: "2592000000" })).toContain(name);
  });

  test("retry delays: 30 days each at most", () => {
    for (const name of ["INBOXD_DELIVERY_RETRY_DELAYS", "INBOXD_WEBHOOK_RETRY_DELAYS"]) {
      expect(loadConfig({ [name]: "60,2592000" })).toBeDefined();
      expect(refused({ [name]: "60,2592001" })).toContain(`${name}: '60,2592001' is not a comma-separated list of seconds, each at most 2592000 (30 days)`);
      expect(refused({ [name]: "99999999999999999999999" })).toContain(name);
    }
  });

  test("analysis threads: at most 64", () => {
    expect(loadConfig({ INBOXD_SMTP_WORKERS: "64" }).smtpWorkers).toBe(64);
    expect(refused({ INBOXD_SMTP_WORKERS: "65" })).toContain("INBOXD_SMTP_WORKERS: '65' is not at most 64");
  });
});

describe("where mail goes", () => {
  test("a relay URL needs a host, and a port from 1 to 65535 if it names one", () => {
    for (const url of ["smtp://", "smtps://:25", "smtp://relay.example.com:0", "smtp://relay.example.com:65536", "http://relay.example.com"]) {
      expect(refused({ INBOXD_SMTP_RELAY: url })).toStartWith("INBOXD_SMTP_RELAY:");
    }
    expect(loadConfig({ INBOXD_SMTP_RELAY: "smtp://relay.example.com:2525" }).smtpRelay).toBe("smtp://relay.example.com:2525");
  });

  test("a relay password is percent-decoded: a bare % is refused at the start, naming the setting (it stopped serve later with exit 1), %25 is a %", () => {
    const refusal = refused({ INBOXD_SMTP_RELAY: "smtp://relayuser:50%off@relay.example.net" });
    expect(refusal).toStartWith("INBOXD_SMTP_RELAY: 'smtp://relayuser:***@relay.example.net' is not");
    expect(refusal).toContain("written %25");
    const url = loadConfig({ INBOXD_SMTP_RELAY: "smtp://relayuser:50%25off@relay.example.net" }).smtpRelay!;
    expect(relayFromUrl(url).auth).toEqual({ user: "relayuser", pass: "50%off" });
  });

  test("a URL's password is never said back: the error goes to the journal", () => {
    expect(refused({ INBOXD_SMTP_RELAY: "smtp://relayuser:RelayPW123@relay.example.net:99999" })).toBe(
      "INBOXD_SMTP_RELAY: 'smtp://relayuser:***@relay.example.net:99999' is not an smtp:// or smtps:// URL with a host (and a port from 1 to 65535, if any; a % in the user or password written %25)",
    );
    expect(refused({ INBOXD_DATABASE_URL: "postgres://inboxd:DbPW456@db.example:5432/inboxd?sslmode=bogus" })).not.toContain("DbPW456");
  });

  test("nor one with an @ not written %40, in the user (a relay's user is often an address) or in the password, or with a space", () => {
    expect(refused({ INBOXD_SMTP_RELAY: "smtp://postmaster@mg.example.com:50%off-Secret@smtp.mailgun.org:587" })).toStartWith(
      "INBOXD_SMTP_RELAY: 'smtp://postmaster@mg.example.com:***@smtp.mailgun.org:587' is not",
    );
    expect(refused({ INBOXD_SMTP_RELAY: "smtps://relayuser:Sec@ret@relay.example.net:0" })).toStartWith("INBOXD_SMTP_RELAY: 'smtps://relayuser:***@relay.example.net:0' is not");
    expect(refused({ INBOXD_SMTP_RELAY: "smtp://relayuser:pa ss@relay.example.net:0" })).not.toContain("pa ss");
    expect(refused({ INBOXD_DATABASE_URL: "postgres://u:s3cr@t@127.0.0.1:5432/db?sslmode=verify_full" })).toStartWith("INBOXD_DATABASE_URL: 'postgres://u:***@127.0.0.1:5432/db?sslmode=verify_full' is not");
    // Nothing is hidden where there is no password; a query's @ is not the host's.
    expect(refused({ INBOXD_SMTP_RELAY: "smtp://relay@relay.example:0" })).toStartWith("INBOXD_SMTP_RELAY: 'smtp://relay@relay.example:0' is not");
    expect(refused({ INBOXD_DATABASE_URL: "postgres://u:PgS3cret@db.example:5432/inboxd?sslmode=bogus&application_name=a@b" })).toStartWith(
      "INBOXD_DATABASE_URL: 'postgres://u:***@db.example:5432/inboxd?sslmode=bogus&application_name=a@b' is not",
    );
    // A slash missing after the scheme, or both.
    expect(refused({ INBOXD_SMTP_RELAY: "smtp:/relayuser:RelayS3cret@relay.example:587" })).toStartWith("INBOXD_SMTP_RELAY: 'smtp:/relayuser:***@relay.example:587' is not");
    expect(refused({ INBOXD_DATABASE_URL: "postgres:dbuser:PgS3cret@db.example/inboxd" })).toStartWith("INBOXD_DATABASE_URL: 'postgres:***@db.example/inboxd' is not");
    // Quotes or a space before it (a config file's value written with its quotes), or no scheme at all.
    for (const [name, value] of [
      ["INBOXD_DATABASE_URL", "'postgres://u:PgS3cret@db.example/inboxd'"],
      ["INBOXD_DATABASE_URL", " postgres://u:PgS3cret@db.example/inboxd"],
      ["INBOXD_SMTP_RELAY", "<smtp://relayuser:PgS3cret@relay.example:587>"],
      ["INBOXD_SMTP_RELAY", "relayuser:PgS3cret@relay.example:587"],
      ["INBOXD_SMTP_RELAY", "relayuser:Pg:S3cret@relay.example:587"],
    ]) {
      const refusal = refused({ [name!]: value! });
      expect(refusal).toStartWith(`${name}:`);
      expect(refusal).not.toContain("PgS3cret");
    }
  });

  test("a PostgreSQL URL's sslmode is one the driver takes, refused at the start rather than at the first connection", () => {
    for (const mode of ["disable", "require", "verify-full"]) expect(loadConfig({ INBOXD_DATABASE_URL: `postgres://db.example/inboxd?sslmode=${mode}` }).databaseUrl).toContain(mode);
    for (const mode of ["bogus", "verify_full"]) expect(refused({ INBOXD_DATABASE_URL: `postgres://db.example/inboxd?sslmode=${mode}` })).toContain("sslmode is one of disable, allow, prefer, require, verify-ca, verify-full");
  });

  test("a PostgreSQL URL with port 0, or a % in its user, password or database not written %25, is refused at the start, naming the setting (it failed later with exit 1)", () => {
    expect(refused({ INBOXD_DATABASE_URL: "postgres://u:pw@127.0.0.1:0/db" })).toContain("with a port from 1 to 65535");
    for (const url of ["postgres://u:p%zzw@127.0.0.1/db", "postgres://u%zz:pw@127.0.0.1/db", "postgres://u:pw@127.0.0.1/d%zzb"]) expect(refused({ INBOXD_DATABASE_URL: url })).toStartWith("INBOXD_DATABASE_URL:");
    expect(loadConfig({ INBOXD_DATABASE_URL: "postgres://u:50%25off@127.0.0.1:5432/db" }).databaseUrl).toBe("postgres://u:50%25off@127.0.0.1:5432/db");
  });

  test("the service's domain and host names are domain names: an IP address is none (RFC 1123 §2.1), and its inboxes could receive no mail", () => {
    for (const name of ["INBOXD_MAIL_DOMAIN", "INBOXD_HOSTNAME"]) {
      for (const value of ["192.0.2.7", "10.0.0.1.", "mail.123"]) expect(refused({ [name]: value })).toStartWith(`${name}: '${value}' is not a domain name`);
      // A single label may be all digits: a container's machine name, the default, only warned about.
      for (const value of ["123.example", "123456789012"]) expect(loadConfig({ [name]: value })).toBeDefined();
    }
  });

  test("the doctor's NTP server: a host name or IP address, and a port from 1 to 65535 if any (a bad one ended doctor before any check)", () => {
    for (const value of ["pool.ntp.org", "pool.ntp.org.", "192.0.2.1:123", "[2001:db8::1]:123", "2001:db8::1", "ntp.example:65535"]) expect(loadConfig({ INBOXD_DOCTOR_NTP_SERVER: value }).doctorNtpServer).toBe(value);
    for (const value of ["pool.ntp.org:99999", "pool.ntp.org:0", "pool.ntp.org:abc", "a b", "1.2.3:123", "pool.ntp.org:123:999", "pool.ntp.org:1e2", "[pool.ntp.org]:123"]) expect(refused({ INBOXD_DOCTOR_NTP_SERVER: value })).toStartWith("INBOXD_DOCTOR_NTP_SERVER:");
  });

  test("ports connected to are 1-65535: 0 names no port", () => {
    for (const name of ["INBOXD_OUTBOUND_PORT", "INBOXD_MTA_STS_POLICY_PORT"]) {
      expect(refused({ [name]: "0" })).toBe(`${name}: '0' is not a port (1-65535)`);
      expect(Object.values(loadConfig({ [name]: "65535" }))).toContain(65535);
    }
  });
});

describe("the config file (INBOXD_CONFIG)", () => {
  test("a config file's line that is not KEY=VALUE is refused by its number, never said back: a mistyped line holds its secret all the same", () => {
    const secretKey = "hMhMRYnZCuK8TCxM32tGyyKkXf0oOq0eqgCK9UN4HpU=";
    for (const line of ["INBOXD_SMTP_RELAY smtp://relayuser:FilePW789@relay.example.net", `INBOXD_SECRET_KEY: ${secretKey}`, "INBOXD_METRICS_TOKEN s3cr3t-metrics-token", `INBOXD SECRET KEY=${secretKey}`]) {
      const file = join(dir, "mistyped.env");
      writeFileSync(file, `# settings\nINBOXD_HTTP_PORT=17781\n${line}\n`);
      expect(refused({ INBOXD_CONFIG: file })).toBe(`INBOXD_CONFIG: line 3 of ${file} is not KEY=VALUE (a key of letters, digits and _, then =)`);
    }
  });

  test("`export NAME=value` lines apply as NAME=value", () => {
    const file = join(dir, "exported.env");
    writeFileSync(file, "export INBOXD_HTTP_PORT=17781\nINBOXD_SMTP_PORT=17783\n");
    expect(loadConfig({ INBOXD_CONFIG: file })).toMatchObject({ httpPort: 17781, smtpPort: 17783 });
    expect(configWarnings(loadConfig({ INBOXD_CONFIG: file }), { INBOXD_CONFIG: file })).toEqual(expect.not.arrayContaining([expect.stringContaining("is not a setting")]));
  });

  test("read as systemd reads an EnvironmentFile: # and ; comments, values in double or single quotes", () => {
    const file = join(dir, "systemd.env");
    writeFileSync(file, `; a comment, as systemd takes it\n# another\nINBOXD_ENV='staging'\nINBOXD_MAIL_DOMAIN="quoted.example"\nINBOXD_HOSTNAME=mx.quoted.example\n`);
    expect(loadConfig({ INBOXD_CONFIG: file })).toMatchObject({ env: "staging", mailDomain: "quoted.example", hostname: "mx.quoted.example" });
  });

  test("every name in it that is not a setting is warned about, whatever its case, with the setting meant", () => {
    const file = join(dir, "typos.env");
    writeFileSync(file, "inboxd_smtp_port=17783\nHTTP_PORT=1\n");
    const warnings = configWarnings(loadConfig({ INBOXD_CONFIG: file }), { INBOXD_CONFIG: file });
    expect(warnings).toContain("inboxd_smtp_port is not a setting of inboxd and is ignored (did you mean INBOXD_SMTP_PORT?)");
    expect(warnings).toContainEqual(expect.stringMatching(/^HTTP_PORT is not a setting of inboxd and is ignored/));
    // In the environment only INBOXD_ names are inboxd's: PATH and HOME are not warned about.
    expect(configWarnings(loadConfig({}), { PATH: "/bin", HOME: "/root" }).filter((line) => line.includes("is not a setting"))).toEqual([]);
  });
});

describe("values that would have acted otherwise than they say", () => {
  test("the page cache: at most what SQLite's 32-bit setting holds (a larger one overflowed to no cache)", () => {
    expect(loadConfig({ INBOXD_DB_CACHE_MB: "2097151" }).dbCacheMb).toBe(2_097_151);
    expect(refused({ INBOXD_DB_CACHE_MB: "2097152" })).toStartWith("INBOXD_DB_CACHE_MB: '2097152' is not at most 2097151");
  });

  test("a metrics token is what a client can send: one without spaces (one with them made /metrics unreachable)", () => {
    expect(loadConfig({ INBOXD_METRICS_TOKEN: "s3cr3t-metrics" }).metricsToken).toBe("s3cr3t-metrics");
    expect(loadConfig({ INBOXD_METRICS_TOKEN: "" }).metricsToken).toBe("");
    for (const token of ["abc def", " "]) expect(refused({ INBOXD_METRICS_TOKEN: token })).toStartWith("INBOXD_METRICS_TOKEN:");
    // A secret: not said back.
    expect(refused({ INBOXD_METRICS_TOKEN: "s3cr3t metrics" })).not.toContain("s3cr3t");
  });

  test("the reserved local parts add to postmaster, abuse and the certificate authorities' names, never replace them", () => {
    const always = ["postmaster", "abuse", "hostmaster", "webmaster", "admin", "administrator"];
    expect(loadConfig({ INBOXD_RESERVED_LOCAL_PARTS: "billing" }).reservedLocalParts).toEqual(["billing", ...always]);
    expect(loadConfig({ INBOXD_RESERVED_LOCAL_PARTS: "" }).reservedLocalParts).toEqual(always);
    expect(loadConfig({ INBOXD_RESERVED_LOCAL_PARTS: "Admin,billing" }).reservedLocalParts.toSorted()).toEqual([...always, "billing"].toSorted());
  });
});
