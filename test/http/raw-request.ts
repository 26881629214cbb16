// One HTTP request written byte for byte (what fetch will not send: no Host, a malformed one),
// over plain TCP or TLS; the answer read until the server closes or it is complete.
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function rawRequest(port: number, request: string, options: { tls?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket: Socket = options.tls ? tlsConnect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => socket.write(request)) : netConnect({ host: "127.0.0.1", port }, () => socket.write(request));
    let received = "";
    const finish = () => {
      const [head = "", ...rest] = received.split("\r\n\r\n");
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n") });
    };
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
      const length = /\r\ncontent-length: *(\d+)/i.exec(received);
      const bodyStart = received.indexOf("\r\n\r\n");
      if (length && bodyStart >= 0 && received.length - bodyStart - 4 >= Number(length[1])) {
        socket.destroy();
        finish();
      }
    });
    socket.on("end", finish);
    socket.on("error", reject);
  });
}

/** The requests without a usable Host that a scanner or a broken client sends. */
export const withoutUsableHost = [
  "GET /health HTTP/1.0\r\n\r\n",
  "GET /health HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n",
  "GET /health HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n",
  "GET /health HTTP/1.1\r\nHost: x@y\r\nConnection: close\r\n\r\n",
  "GET /health HTTP/1.1\r\nHost: a%00b\r\nConnection: close\r\n\r\n",
  // A host too short for the router, which took the path's first segment for part of it.
  "GET /zz/health HTTP/1.1\r\nHost: ab\r\nConnection: close\r\n\r\n",
  // RFC 9112 §3.2: more than one Host field line (Bun took the first; a proxy before it may take the last).
  "GET /health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n",
];
