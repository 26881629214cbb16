/**
 * The listeners that certificates need: HTTPS for the API and console (and the MTA-STS policy
 * hosts), with HSTS; and with ACME, plain HTTP on port 80 that answers HTTP-01 challenges and
 * sends everything else to HTTPS.
 */
import type { App } from "../app";
import { listenError } from "../config";
import { createHttpApp } from "../http/app";
import { listenerBodyBytes } from "../http/body";
import { badHostResponse, requestUrl } from "../http/request-url";
import { withoutErrorPages } from "../http/plain-listener";
import { mtaStsHost } from "./names";
import { POLICY_PATH, policyText } from "../mta-sts/policy";
import type { RunningPart } from "../running-part";
import type { ServedCertificates } from "./served";

/** RFC 6797 §6.1: a year; not includeSubDomains, which would bind every host of the operator's domain. */
const HSTS = "max-age=31536000";
/** RFC 8555 §8.3: the token is base64url. */
const CHALLENGE_PATH = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]+)$/;

/** RFC 8461 §3.3: the policy at https://mta-sts.<domain>/.well-known/mta-sts.txt, for the domains we take mail for. */
async function mtaStsPolicy(app: App, request: Request): Promise<Response | undefined> {
  const url = requestUrl(request);
  if (app.config.mtaStsMode === "none" || url?.pathname !== POLICY_PATH) return undefined;
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  const domains = [app.config.mailDomain, ...(await app.store.domains.receivingNames())];
  if (!domains.some((domain) => mtaStsHost(domain.toLowerCase()) === host)) return undefined;
  return new Response(policyText(app.config), { headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "max-age=3600" } });
}

/**
 * HTTPS on INBOXD_HTTPS_PORT. Bun cannot change the certificates of a listening server, so a new
 * certificate starts a second server on the same port (SO_REUSEPORT) and the first one stops
 * taking connections, finishing the requests it has.
 */
export function startHttpsListener(app: App, served: ServedCertificates, port: number): RunningPart {
  const { bind, hostname } = app.config;
  const tls = () => {
    const { cert, key } = served.primary;
    return [{ serverName: hostname.toLowerCase(), cert, key }, ...served.named.filter((entry) => entry.name !== hostname.toLowerCase()).map(({ name, cert, key }) => ({ serverName: name, cert, key }))];
  };
  // The API's own app, so that its errors, 404s included, are the API's {error} answers here too.
  const listen = (listenPort: number) =>
    createHttpApp(app, {
      beforeEveryRequest: async (request, headers) => {
        headers["strict-transport-security"] = HSTS;
        return mtaStsPolicy(app, request);
      },
    }).listen({ port: listenPort, hostname: bind, tls: tls(), maxRequestBodySize: listenerBodyBytes, reusePort: true, development: false }).server!;
  let server: ReturnType<typeof listen>;
  try {
    server = listen(port);
  } catch (error) {
    throw listenError(error, "INBOXD_HTTPS_PORT", bind, port);
  }
  const boundPort = server.port!;
  const unsubscribe = served.onChange(() => {
    const previous = server;
    try {
      server = listen(boundPort);
    } catch (error) {
      app.log.error("https: the new certificates could not be taken; the previous ones keep serving", { error });
      return;
    }
    void previous.stop(false);
    app.log.info("https: serving the new certificates", { names: tls().map((entry) => entry.serverName).join(",") });
  });
  return {
    name: "https",
    address: { host: bind, port: boundPort },
    async stop() {
      unsubscribe();
      await Promise.race([server.stop(false), Bun.sleep(app.shutdown.remainingMs())]);
      await server.stop(true);
    },
  };
}

/** INBOXD_ACME_HTTP_PORT: HTTP-01 challenges (RFC 8555 §8.3), and a redirect to HTTPS for the rest. */
export function startAcmeHttpListener(app: App, httpsPort: number): RunningPart {
  const { bind, acmeHttpPort } = app.config;
  let server;
  try {
    server = Bun.serve({
      hostname: bind,
      port: acmeHttpPort,
      reusePort: false,
      ...withoutErrorPages(app, "acme-http"),
      async fetch(request) {
        const url = requestUrl(request);
        if (!url) return badHostResponse();
        const token = CHALLENGE_PATH.exec(url.pathname)?.[1];
        if (token) {
          const keyAuthorization = await app.store.certificates.challenge(token, app.clock.now());
          return keyAuthorization ? new Response(keyAuthorization, { headers: { "content-type": "text/plain" } }) : Response.json({ error: "Not found" }, { status: 404 });
        }
        const port = httpsPort === 443 ? "" : `:${httpsPort}`;
        return new Response(null, { status: 301, headers: { location: `https://${url.hostname}${port}${url.pathname}${url.search}` } });
      },
    });
  } catch (error) {
    throw listenError(error, "INBOXD_ACME_HTTP_PORT", bind, acmeHttpPort);
  }
  return {
    name: "acme-http",
    address: { host: bind, port: server.port! },
    async stop() {
      await server.stop(true);
    },
  };
}
