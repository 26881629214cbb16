// An HTTP(S) server on 127.0.0.1 standing in for a customer's webhook
// endpoint: records every request and answers per path as a test tells it to.
import type { PemCertificate } from "./tls";

export type ReceivedRequest = {
  method: string;
  path: string; // path and query
  headers: Record<string, string>; // names in lower case
  body: string;
  receivedAt: number; // ms since the epoch, taken on arrival
};

export type Responder = {
  status?: number; // default 200, or 302 with `redirect`
  delayMs?: number; // wait before answering (timeouts)
  hold?: Promise<unknown>; // answer once it settles (a try kept in flight while the test acts)
  body?: string;
  redirect?: string; // sent as Location
};

export type WebhookReceiver = {
  port: number;
  url(path?: string): string;
  requests: ReceivedRequest[];
  respond(path: string, responder: Responder): void;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
};

// With `tls`, serves https with that certificate; the host name in url() stays 127.0.0.1.
export function startWebhookReceiver(options: { tls?: PemCertificate } = {}): WebhookReceiver {
  const requests: ReceivedRequest[] = [];
  const responders = new Map<string, Responder>();

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...(options.tls ? { tls: { cert: options.tls.cert, key: options.tls.key } } : {}),
    async fetch(request) {
      const url = new URL(request.url);
      requests.push({
        method: request.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(request.headers),
        body: await request.text(),
        receivedAt: Date.now(),
      });
      const responder = responders.get(url.pathname) ?? {};
      if (responder.delayMs) await Bun.sleep(responder.delayMs);
      await responder.hold;
      const headers = responder.redirect ? { location: responder.redirect } : undefined;
      const status = responder.status ?? (responder.redirect ? 302 : 200);
      return new Response(responder.body ?? "", { status, headers });
    },
  });
  const scheme = options.tls ? "https" : "http";

  return {
    port: server.port!,
    url: (path = "/") => `${scheme}://127.0.0.1:${server.port}${path}`,
    requests,
    respond: (path, responder) => void responders.set(path, responder),
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) throw new Error(`webhook receiver: ${requests.length} of ${count} requests after ${timeoutMs} ms`);
        await Bun.sleep(10);
      }
      return requests;
    },
    // Closes open connections too, so that a delayed answer cannot hold a test up.
    close: () => server.stop(true),
  };
}
