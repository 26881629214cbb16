/**
 * Requests from a chosen loopback source address. Linux routes all of 127.0.0.0/8 to the loopback
 * interface, so binding the client socket to 127.0.0.N lets one test act as many distinct clients
 * (the server sees them through `server.requestIP`). fetch cannot pick its source address; node:http can.
 */
import { request } from "node:http";
import type { ApiResponse } from "../harness";

export function postFrom<T = any>(localAddress: string, baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      baseUrl + path,
      { method: "POST", localAddress, headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === "string") headers.set(name, value);
          resolve({ status: res.statusCode!, headers, body: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
