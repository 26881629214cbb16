/**
 * `/mcp`: the MCP server over Streamable HTTP (docs/mcp.md), for an organization's API key. The
 * route checks the key as every `/v1` route does and hands the request to src/mcp, whose tools
 * call this same app through `handle` (given by app.ts: src/mcp never imports the HTTP layer)
 * with the caller's key, so that each tool is the API route it names, tenancy included.
 *
 * Left out of /openapi.json: it speaks JSON-RPC, not REST; the server describes its own tools
 * (`tools/list`), and docs/mcp.md the rest.
 */
import { Elysia } from "elysia";
import type { App } from "../../app";
import { apiCaller, type RequestHandler } from "../../mcp/api-caller";
import { apiKeyGuard, bearerToken } from "../auth";

/** Stateless: no server-initiated stream to GET, no session to DELETE (Streamable HTTP allows 405 for both). */
const postOnly = () => Response.json({ error: "This MCP endpoint is stateless: POST JSON-RPC messages to it" }, { status: 405, headers: { Allow: "POST" } });

const hidden = { detail: { hide: true } };

export const mcpRoutes = (app: App, handle: RequestHandler) =>
  new Elysia()
    .use(apiKeyGuard(app))
    .post(
      "/mcp",
      async ({ request, body, headers }) => {
        // The MCP SDK and zod load with the first MCP request: about 6 MB that a server no agent talks to does not hold.
        const { handleMcpPost } = await import("../../mcp/server");
        return handleMcpPost(request, body, apiCaller(handle, new URL(request.url).origin, bearerToken(headers.authorization)));
      },
      hidden,
    )
    .get("/mcp", postOnly, hidden)
    .delete("/mcp", postOnly, hidden);
