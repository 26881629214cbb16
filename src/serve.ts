/**
 * `inboxd serve`: starts every part on one App (HTTP API, and the SMTP server and queues as they
 * join) and stops them in reverse order, bounded by INBOXD_SHUTDOWN_TIMEOUT_MS.
 */
import { resolve } from "node:path";
import type { App } from "./app";
import { createServer } from "node:net";
import { ConfigError, listenError, type Config } from "./config";
import { operatorCertificate, readCertificates } from "./smtp/tls";
import { createHttpApp } from "./http/app";
import { listenerBodyBytes } from "./http/body";
import { withoutErrorPages } from "./http/plain-listener";
import { badHostResponse, requestUrl } from "./http/request-url";
import { metricsResponse } from "./http/routes/metrics";
import { startOutboundQueue } from "./outbound/queue";
import { ensureServiceDkimKeys } from "./outbound/service-domain";
import { startWebhookQueue } from "./webhooks/queue";
import { startDomainChecks } from "./domains/background";
import { startDraftsQueue } from "./drafts/queue";
import { releaseUnfinishedKeys } from "./idempotency/keys";
import { startEventRetention } from "./events/retention";
import type { RunningPart } from "./running-part";
import { startSmtp } from "./smtp/server";
import { startAcmeHttpListener, startHttpsListener } from "./certs/listeners";
import { httpsPortOf } from "./certs/names";
import { startCertificateRenewal } from "./certs/renewal";
import { servedCertificates } from "./certs/served";
import { version } from "./version";

export interface Running {
  httpPort: number;
  parts: RunningPart[];
  stop(): Promise<void>;
}

const withTimeout = (p: Promise<void>, ms: number) =>
  Promise.race([p, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);

function startHttp(app: App): RunningPart {
  const { httpPort, bind } = app.config;
  let http;
  try {
    http = createHttpApp(app).listen({
      port: httpPort,
      hostname: bind,
      maxRequestBodySize: listenerBodyBytes,
      // Elysia asks for SO_REUSEPORT, which let a second server share the port and take half the requests.
      reusePort: false,
      // Bun's development default answers what escapes the app with its error page (stack, source).
      development: false,
    });
  } catch (error) {
    throw listenError(error, "INBOXD_HTTP_PORT", bind, httpPort);
  }
  const server = http.server!;
  return {
    name: "http",
    address: { host: app.config.bind, port: server.port! },
    async stop() {
      await withTimeout(server.stop(false), app.shutdown.remainingMs());
      await server.stop(true);
    },
  };
}

/** INBOXD_METRICS_BIND: `/metrics` without a token, on an address that only the scraper reaches. */
function startMetricsListener(app: App, bind: { host: string; port: number }): RunningPart {
  let server;
  try {
    server = Bun.serve({
      hostname: bind.host,
      port: bind.port,
      reusePort: false,
      ...withoutErrorPages(app, "metrics"),
      fetch(request) {
        const url = requestUrl(request);
        if (!url) return badHostResponse();
        if (url.pathname !== "/metrics") return Response.json({ error: "Not found" }, { status: 404 });
        if (request.method !== "GET" && request.method !== "HEAD") return Response.json({ error: "Method not allowed: GET /metrics" }, { status: 405, headers: { allow: "GET, HEAD" } });
        return metricsResponse(app);
      },
    });
  } catch (error) {
    throw listenError(error, "INBOXD_METRICS_BIND", bind.host, bind.port);
  }
  return {
    name: "metrics",
    address: { host: bind.host, port: server.port! },
    async stop() {
      await server.stop(true);
    },
  };
}

/**
 * Before the database is opened: every port this start will listen on is free to take, and the
 * certificate files are usable. A failure is one line naming the setting, and nothing is written.
 * (A port taken between this check and the listen fails the same way, only later.)
 */
export async function checkBeforeStart(config: Config): Promise<void> {
  operatorCertificate(config);
  const listeners: [string, string, number][] = [["INBOXD_HTTP_PORT", config.bind, config.httpPort]];
  // Port 25 without the right to bind it falls back to 2525 (smtp/server.ts); that is no failure.
  listeners.push(["INBOXD_SMTP_PORT", config.bind, config.smtpPort]);
  if (config.metricsBind) listeners.push(["INBOXD_METRICS_BIND", config.metricsBind.host, config.metricsBind.port]);
  const httpsPort = httpsPortOf(config);
  if (httpsPort !== undefined) listeners.push(["INBOXD_HTTPS_PORT", config.bind, httpsPort]);
  if (config.acmeEmail) listeners.push(["INBOXD_ACME_HTTP_PORT", config.bind, config.acmeHttpPort]);
  if (config.acmeCaFile) readCertificates("INBOXD_ACME_CA_FILE", config.acmeCaFile);
  if (config.outboundCaFile) readCertificates("INBOXD_OUTBOUND_CA_FILE", config.outboundCaFile);
  const databaseCaFile = config.databaseUrl && new URL(config.databaseUrl).searchParams.get("sslrootcert");
  if (databaseCaFile) readCertificates("INBOXD_DATABASE_URL", databaseCaFile);
  refuseSharedPorts(listeners);
  for (const [setting, host, port] of listeners) {
    if (port === 0) continue;
    const probe = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        probe.once("error", reject);
        probe.listen({ host, port, exclusive: true }, resolve);
      });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (setting === "INBOXD_SMTP_PORT" && port === 25 && (code === "EACCES" || code === "EPERM")) continue;
      throw listenError(error, setting, host, port);
    } finally {
      await new Promise<void>((resolve) => probe.close(() => resolve()));
    }
  }
}

const everyAddress = (host: string) => host === "0.0.0.0" || host === "::";

/** Two listeners on one port: each probe would pass alone, and the second listen would then blame "another process". */
function refuseSharedPorts(listeners: [string, string, number][]): void {
  listeners.forEach(([setting, host, port], i) => {
    const earlier = listeners.slice(0, i).find(([, otherHost, otherPort]) => port !== 0 && otherPort === port && (otherHost === host || everyAddress(host) || everyAddress(otherHost)));
    if (earlier) throw new ConfigError(`${setting}: port ${port} is ${earlier[0]}'s too: give each listener a port of its own`);
  });
}

export async function startServices(app: App): Promise<Running> {
  const parts: RunningPart[] = [];
  try {
    // First, so it stops last (stopParts): it writes the database until every other part is done with it.
    parts.push(await app.store.startMaintenance(app.log));
    await releaseUnfinishedKeys(app);
    parts.push(startHttp(app));
    if (app.config.metricsBind) parts.push(startMetricsListener(app, app.config.metricsBind));
    const certificates = await servedCertificates(app);
    const httpsPort = httpsPortOf(app.config);
    const https = httpsPort === undefined ? undefined : startHttpsListener(app, certificates, httpsPort);
    if (https) parts.push(https);
    // With ACME there is always HTTPS (443 by default): port 80 redirects to the port it took.
    if (app.config.acmeEmail && https) parts.push(startAcmeHttpListener(app, https.address!.port));
    parts.push(await startSmtp(app, certificates));
    await ensureServiceDkimKeys(app);
    parts.push(startOutboundQueue(app));
    parts.push(startWebhookQueue(app));
    parts.push(startDomainChecks(app));
    if (app.config.acmeEmail) parts.push(startCertificateRenewal(app, certificates));
    parts.push(startEventRetention(app));
    // Stopped before the others (stopParts): open event streams never finish by themselves, and a
    // listener's stop waits for its requests to finish.
    parts.push({ name: "event-streams", stop: async () => app.eventStreams.closeAll() });
    parts.push(startDraftsQueue(app));
  } catch (e) {
    await stopParts(app, parts);
    throw e;
  }
  for (const part of parts) if (part.address) app.log.info("listening", { part: part.name, address: `${part.address.host}:${part.address.port}` });
  const { mailDomain, hostname, dataDir } = app.config;
  const listeners = parts.flatMap((part) => (part.address ? [`${part.name}=${part.address.host}:${part.address.port}`] : [])).join(" ");
  app.log.info("ready", { version, mailDomain, hostname, dataDir: resolve(dataDir), database: app.config.databaseUrl ? "postgresql" : "sqlite", listeners });
  return {
    httpPort: parts.find((p) => p.name === "http")!.address!.port,
    parts,
    stop: () => stopParts(app, parts),
  };
}

/**
 * Stops the parts together, each waiting for its work in flight within the one shutdown deadline
 * (INBOXD_SHUTDOWN_TIMEOUT_MS): stopped one after another, a slow MX or webhook endpoint spent the
 * time of the SMTP sessions and HTTP requests stopped after it. Two orders hold: the event
 * streams close first (an open stream never ends by itself, and the HTTP listener's stop waits for
 * its requests), and the database maintenance, started first, stops last, once no part writes.
 */
async function stopParts(app: App, parts: RunningPart[]): Promise<void> {
  app.shutdown.begin();
  const stop = (part: RunningPart) => {
    app.log.debug("stopping", { part: part.name });
    return part.stop();
  };
  const [maintenance, ...others] = parts;
  const streams = others.filter((part) => part.name === "event-streams");
  for (const part of streams) await stop(part);
  await Promise.all(others.filter((part) => !streams.includes(part)).map(stop));
  if (maintenance) await stop(maintenance);
}
