// TLS reports (RFC 8460) mailed to our rua address: accepted over SMTP without an inbox, read from
// their gzip or JSON part, stored once per report and policy domain, and listed under the domain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { queryRows, seedOrganization, startTestServer, type TestServer } from "../harness";
import { sendMail } from "../smtp/mail-client";

let server: TestServer;
let apiKey: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey } = await seedOrganization(server.app));
  expect((await server.api.post("/v1/domains", { name: "reports.example" }, apiKey)).status).toBe(201);
});
afterAll(() => server.cleanup());

const report = (reportId: string, failed = 2) => ({
  "organization-name": "Company-X",
  "date-range": { "start-datetime": "2026-11-24T00:00:00Z", "end-datetime": "2026-11-24T23:59:59Z" },
  "contact-info": "sts-reporting@company-x.example",
  "report-id": reportId,
  policies: [
    {
      policy: { "policy-type": "sts", "policy-string": ["version: STSv1", "mode: testing"], "policy-domain": "reports.example", "mx-host": ["mx.inboxd.test"] },
      summary: { "total-successful-session-count": 5326, "total-failure-session-count": failed },
      "failure-details": [{ "result-type": "certificate-expired", "sending-mta-ip": "2001:db8:abcd:0012::1", "receiving-mx-hostname": "mx.inboxd.test", "failed-session-count": failed }],
    },
  ],
});

/** RFC 8460 §5.3: multipart/report; report-type="tlsrpt", the report gzipped as application/tlsrpt+gzip. */
function reportMessage(body: Buffer, type = "application/tlsrpt+gzip"): string {
  return [
    "From: tlsrpt@company-x.example",
    "To: tlsrpt@mx.inboxd.test",
    "Subject: Report Domain: reports.example Submitter: company-x.example Report-ID: <x@company-x.example>",
    "TLS-Report-Domain: reports.example",
    "TLS-Report-Submitter: company-x.example",
    "MIME-Version: 1.0",
    'Content-Type: multipart/report; report-type="tlsrpt"; boundary="b1"',
    "",
    "--b1",
    "Content-Type: text/plain",
    "",
    "This is an aggregate TLS report from company-x.example",
    "--b1",
    `Content-Type: ${type}`,
    "Content-Transfer-Encoding: base64",
    'Content-Disposition: attachment; filename="report.json.gz"',
    "",
    body.toString("base64").replace(/.{76}/g, "$&\r\n"),
    "--b1--",
    "",
  ].join("\r\n");
}

const reports = () => server.api.get("/v1/domains/reports.example/tls-reports", apiKey);
const listedIds = async () => (await reports()).body.map((entry: { reportId: string }) => entry.reportId);

/** A report's JSON padded to `bytes`. */
function jsonOfSize(reportId: string, bytes: number): Buffer {
  const base = JSON.stringify({ ...report(reportId), padding: "" }).length;
  return Buffer.from(JSON.stringify({ ...report(reportId), padding: " ".repeat(bytes - base) }));
}

describe("TLS reports", () => {
  test("a gzipped report is accepted at tlsrpt@INBOXD_HOSTNAME and listed under its domain", async () => {
    const sent = await sendMail(server.smtpPort, { from: "tlsrpt@company-x.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(report("2026-11-24T00:00:00Z_reports.example")))) });
    expect(sent.response).toStartWith("250");
    const listed = await reports();
    expect(listed.status).toBe(200);
    expect(listed.headers.get("x-total-count")).toBe("1");
    expect(listed.body).toEqual([
      {
        id: expect.stringMatching(/^tlsrpt_/),
        _id: listed.body[0].id,
        reportId: "2026-11-24T00:00:00Z_reports.example",
        organizationName: "Company-X",
        policyType: "sts",
        startAt: "2026-11-24T00:00:00.000Z",
        endAt: "2026-11-24T23:59:59.000Z",
        successfulSessions: 5326,
        failedSessions: 2,
        failureDetails: [{ resultType: "certificate-expired", sessions: 2, receivingMx: "mx.inboxd.test" }],
        receivedAt: expect.any(String),
      },
    ]);
  });

  test("the same report sent again is kept once, and logged as a copy, not as received; a JSON one (application/tlsrpt+json) is read too", async () => {
    const logged: [string, Record<string, unknown> | undefined][] = [];
    const { info } = server.app.log;
    server.app.log.info = (event, fields) => logged.push([event, fields]);
    try {
      await sendMail(server.smtpPort, { from: "tlsrpt@company-x.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(report("2026-11-24T00:00:00Z_reports.example")))) });
    } finally {
      server.app.log.info = info;
    }
    expect(logged.filter(([event]) => event.startsWith("tls report"))).toEqual([
      ["tls report ignored", { reason: "a copy of a report kept already (sent again)", count: 1, domains: "reports.example", reportId: "2026-11-24T00:00:00Z_reports.example" }],
    ]);
    await sendMail(server.smtpPort, { from: "tlsrpt@company-x.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(Buffer.from(JSON.stringify(report("second", 0))), "application/tlsrpt+json") });
    const listed = await reports();
    expect(listed.body.map((entry: { reportId: string }) => entry.reportId).sort()).toEqual(["2026-11-24T00:00:00Z_reports.example", "second"]);
  });

  test("a report about 800 long names of domains not served here logs how many and the first three, cut: not a line of 800 KB per 8 KB message", async () => {
    const name = (i: number) => `d${i}-${"a".repeat(240)}.${"b".repeat(60)}.example`;
    const policy = report("many names").policies[0]!;
    const many = { ...report("many names"), policies: Array.from({ length: 800 }, (_, i) => ({ ...policy, policy: { ...policy.policy, "policy-domain": name(i) } })) };
    const lines: string[] = [];
    const { info } = server.app.log;
    server.app.log.info = (event, fields) => void lines.push(JSON.stringify([event, fields]));
    try {
      const sent = await sendMail(server.smtpPort, { from: "tlsrpt@company-x.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(many))) });
      expect(sent.response).toStartWith("250");
    } finally {
      server.app.log.info = info;
    }
    const ignored = lines.filter((line) => line.includes("tls report ignored"));
    expect(ignored).toHaveLength(1);
    expect(ignored[0]!.length).toBeLessThan(1_000);
    expect(JSON.parse(ignored[0]!)[1]).toEqual({ reason: "about a domain we do not serve", count: 800, domains: [0, 1, 2].map((i) => name(i).slice(0, 253)).join(",") });
  });

  test("an author's name and report-id are at most 1,024 bytes: one in a non-Latin script at the edge is stored, one character more is ignored (PostgreSQL refused its key, and the report was tried again for ever)", async () => {
    const name = (characters: number) => "報".repeat(characters) + "x"; // 3 bytes each, then 1
    const send = (organizationName: string, reportId: string) =>
      sendMail(server.smtpPort, { from: "tlsrpt@company-x.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify({ ...report(reportId), "organization-name": organizationName }))) });
    const atTheEdge = `${"報".repeat(340)}long-report-id`.slice(0, 341);
    expect((await send(name(341), atTheEdge)).response).toStartWith("250");
    expect(await listedIds()).toContain(atTheEdge);
    expect((await send(name(342), "one-byte-over")).response).toStartWith("250");
    expect(await listedIds()).not.toContain("one-byte-over");
  });

  test("RFC 8460 §4.4: a report-id is one author's; another author's report with the same id, and a report's tlsa entry beside its sts one, are kept too; counts past 2^31 are kept", async () => {
    const id = "2026-11-25T00:00:00Z_reports.example";
    const first = report(id);
    const second = { ...report(id, 3), "organization-name": "Company-Y" };
    const both = { ...report(id, 4), "organization-name": "Company-Z" };
    both.policies.push({ ...both.policies[0]!, policy: { ...both.policies[0]!.policy, "policy-type": "tlsa" }, summary: { "total-successful-session-count": 2 ** 40, "total-failure-session-count": 0 } });
    for (const body of [first, second, both]) await sendMail(server.smtpPort, { from: "tlsrpt@company-x.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(body))) });
    const kept = (await reports()).body.filter((entry: { reportId: string }) => entry.reportId === id);
    expect(kept.map((entry: { organizationName: string; policyType: string }) => `${entry.organizationName} ${entry.policyType}`).sort()).toEqual(["Company-X sts", "Company-Y sts", "Company-Z sts", "Company-Z tlsa"]);
    expect(kept.find((entry: { policyType: string }) => entry.policyType === "tlsa").successfulSessions).toBe(2 ** 40);
  });

  test("RFC 8460 §4.4: a policy type other than tlsa, sts and no-policy-found makes the report unreadable (each made-up type was a row: 1,000 of them, 1,000 rows)", async () => {
    const made = report("made-up-types");
    made.policies = Array.from({ length: 1000 }, (_, n) => ({ ...made.policies[0]!, policy: { ...made.policies[0]!.policy, "policy-type": `t${n}` } }));
    expect((await sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(made))) })).response).toStartWith("250");
    const stored = async (reportId: string) => (await queryRows<{ n: number }>(server.app, "SELECT count(*) AS n FROM tls_reports WHERE report_id = ?", reportId))[0]!.n;
    expect(Number(await stored("made-up-types"))).toBe(0);
    const none = report("no-policy-found");
    none.policies[0]!.policy = { ...none.policies[0]!.policy, "policy-type": "no-policy-found" };
    await sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(none))) });
    expect(Number(await stored("no-policy-found"))).toBe(1);
  });

  test("a forged report sent first under a provider's name and predictable report-id does not take the real one's place: both are kept", async () => {
    const id = "2026-11-26T00:00:00Z_reports.example";
    const forged = { ...report(id, 0), "organization-name": "Google Inc." };
    const real = { ...report(id, 50), "organization-name": "Google Inc." };
    for (const body of [forged, real, real]) await sendMail(server.smtpPort, { from: "noreply-smtp-tls-reporting@google.com", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(gzipSync(JSON.stringify(body))) });
    const kept = await queryRows<{ failed_sessions: number }>(server.app, "SELECT failed_sessions FROM tls_reports WHERE report_id = ? ORDER BY failed_sessions", id);
    // The real one sent twice is kept once (RFC 8460 §5.3 resends).
    expect(kept.map((row) => Number(row.failed_sessions))).toEqual([0, 50]);
  });

  test("a message without a readable report is accepted and dropped; a report inflating past 1 MiB is no report, one of exactly 1 MiB is", async () => {
    const before = await listedIds();
    expect((await sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: "Subject: hi\r\n\r\nnot a report\r\n" })).response).toStartWith("250");
    const ofSize = (reportId: string, bytes: number) => gzipSync(jsonOfSize(reportId, bytes));
    expect((await sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(ofSize("one-byte-over", 1024 * 1024 + 1)) })).response).toStartWith("250");
    expect(await listedIds()).toEqual(before);
    await sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(ofSize("at-the-limit", 1024 * 1024)) });
    expect(await listedIds()).toContain("at-the-limit");
  });

  test("a message larger than any report's (2 MiB) is accepted and dropped unread; a JSON report of 1 MiB in base64 still fits", async () => {
    const send = (raw: string) => sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw });
    const fits = reportMessage(jsonOfSize("json-at-the-limit", 1024 * 1024), "application/tlsrpt+json");
    expect(fits.length).toBeLessThan(2 * 1024 * 1024);
    expect((await send(fits)).response).toStartWith("250");
    const padded = reportMessage(gzipSync(JSON.stringify(report("in-a-large-message"))))
      .replace("This is an aggregate TLS report from company-x.example", `${"x".repeat(998)}\r\n`.repeat(2200));
    expect(padded.length).toBeGreaterThan(2 * 1024 * 1024);
    expect((await send(padded)).response).toStartWith("250");
    const listed = await listedIds();
    expect(listed).toContain("json-at-the-limit");
    expect(listed).not.toContain("in-a-large-message");
  });

  test("only reports about a domain we serve are kept, and only those received since its record was made are listed: a name deleted and claimed again starts empty", async () => {
    const sendAbout = (reportId: string, domain: string) =>
      sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(Buffer.from(JSON.stringify(report(reportId)).replaceAll("reports.example", domain)), "application/tlsrpt+json") });
    const first = await seedOrganization(server.app, "First holder");
    const second = await seedOrganization(server.app, "Second holder");
    const listedFor = async (key: string) => (await server.api.get("/v1/domains/shared.example/tls-reports", key)).body.map((entry: { reportId: string }) => entry.reportId);

    await sendAbout("before-anyone", "shared.example");
    expect((await server.api.post("/v1/domains", { name: "shared.example" }, first.apiKey)).status).toBe(201);
    await sendAbout("first-holder", "shared.example");
    expect(await listedFor(first.apiKey)).toEqual(["first-holder"]);

    expect((await server.api.delete("/v1/domains/shared.example", first.apiKey)).status).toBe(200);
    await sendAbout("between-holders", "shared.example");
    expect((await server.api.post("/v1/domains", { name: "shared.example" }, second.apiKey)).status).toBe(201);
    expect(await listedFor(second.apiKey)).toEqual([]);
    expect((await server.api.get("/v1/domains/shared.example/tls-reports", second.apiKey)).headers.get("x-total-count")).toBe("0");
    await sendAbout("second-holder", "shared.example");
    expect(await listedFor(second.apiKey)).toEqual(["second-holder"]);

    const stored = await queryRows<{ report_id: string }>(server.app, "SELECT report_id FROM tls_reports WHERE policy_domain = 'shared.example' ORDER BY report_id");
    expect(stored.map((row) => row.report_id)).toEqual(["first-holder", "second-holder"]);
  });

  test("a NUL in a report's strings is left out of what is stored, on either engine", async () => {
    const withNul = JSON.stringify(report("nul-report")).replace('"Company-X"', '"Company\\u0000-X"');
    await sendMail(server.smtpPort, { from: "a@b.example", to: ["tlsrpt@mx.inboxd.test"], raw: reportMessage(Buffer.from(withNul), "application/tlsrpt+json") });
    expect((await reports()).body.find((entry: { reportId: string }) => entry.reportId === "nul-report")).toMatchObject({ organizationName: "Company-X" });
  });

  test("another organization's domain, or an unknown one: 404", async () => {
    const other = await seedOrganization(server.app, "Other org");
    expect((await server.api.get("/v1/domains/reports.example/tls-reports", other.apiKey)).status).toBe(404);
  });
});
