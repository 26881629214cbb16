/**
 * The MCP server of inboxd (Model Context Protocol, on the official TypeScript SDK): the tools of
 * tools.ts over two transports. Streamable HTTP at `/mcp` on the API port, stateless (a server and
 * a transport per request, each POST answered with JSON, no session), its tools calling the app
 * in the same process; and stdio (`inboxd mcp`), its tools calling a running inboxd over HTTP.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { ClientRequestSchema, ErrorCode, JSONRPCMessageSchema, LATEST_PROTOCOL_VERSION, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { version } from "../version";
import type { ApiCaller } from "./api-caller";
import { tools, untrustedNote } from "./tools";

/** The MCP specification version served (the SDK's newest; it also accepts a client's older supported one). */
export const mcpProtocolVersion = LATEST_PROTOCOL_VERSION;

const instructions = `Tools of inboxd, a self-hosted email service: inboxes, threads, messages, drafts, labels, custom domains and webhooks of one organization (the API key's). ${untrustedNote}`;

export function createMcpServer(api: ApiCaller): McpServer {
  const server = new McpServer({ name: "inboxd", title: "inboxd", version }, { instructions });
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      // Strict: an argument the tool does not take is an error naming it, not dropped (a misspelt
      // send_at left a draft unscheduled while the call said it worked).
      { title: tool.title, description: `${tool.description} ${untrustedNote}`, inputSchema: z.strictObject(tool.input), annotations: { title: tool.title, ...tool.annotations } },
      (args) => tool.call(args, api),
    );
  }
  // The SDK promises notifications/tools/list_changed once a tool is registered; inboxd's tools
  // are the same for every request and never change, so no such notification ever comes.
  server.server.registerCapabilities({ tools: { listChanged: false } });
  return server;
}

/**
 * One Streamable HTTP POST, its JSON body already read (by the API's own body parser and limits).
 * Stateless: nothing outlives the request, so any inboxd process can answer any request.
 */
export async function handleMcpPost(request: Request, body: unknown, api: ApiCaller): Promise<Response> {
  // JSON-RPC batches left MCP in 2025-06-18: one request holding forty reads of a large message
  // took the server to 2.9 GB. One message per POST.
  if (Array.isArray(body)) return jsonRpcError(ErrorCode.InvalidRequest, "Batches are not supported: send one JSON-RPC message per request", null, 400);
  const invalid = invalidMessage(body);
  if (invalid) return invalid;
  const server = createMcpServer(api);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody: body });
  } finally {
    await server.close();
  }
}

const jsonRpcError = (code: ErrorCode, message: string, id: RequestId | null, status: number) => Response.json({ jsonrpc: "2.0", error: { code, message }, id }, { status });

/** The schema of each request this server answers, by its method: the others are the SDK's -32601 (Method not found). */
const answered = new Set(["initialize", "ping", "tools/list", "tools/call"]);
const requestSchemas = new Map<string, (typeof ClientRequestSchema.options)[number]>(
  ClientRequestSchema.options.filter((schema) => answered.has(schema.shape.method.value)).map((schema) => [schema.shape.method.value, schema]),
);

/**
 * JSON-RPC 2.0 §5.1's answer to a body that is no JSON-RPC message (-32600) or a request whose
 * params its method cannot take (-32602), in one line. The SDK answers the first as a parse
 * error (-32700, for JSON that could not be read) and the second as its own fault (-32603), with
 * the schema's issues dumped as the message.
 */
function invalidMessage(body: unknown): Response | undefined {
  const refusal = refusalOf(body);
  return refusal && jsonRpcError(refusal.code, refusal.message, refusal.id, refusal.code === ErrorCode.InvalidRequest ? 400 : 200);
}

type Refusal = { code: ErrorCode; message: string; id: RequestId | null };

/** The tools by name: `__proto__` or `constructor` is no tool, where the SDK's lookup took them for disabled ones. */
const toolNames = new Set(tools.map((tool) => tool.name));

function refusalOf(body: unknown): Refusal | undefined {
  if (!JSONRPCMessageSchema.safeParse(body).success) {
    return { code: ErrorCode.InvalidRequest, message: 'Invalid Request: a JSON-RPC 2.0 message has "jsonrpc": "2.0", a method, and an id (a string or a number) for a request', id: null };
  }
  const { method, id, params } = body as { method?: unknown; id?: RequestId; params?: { name?: unknown } };
  // A notification (no id) gets no answer, whatever it holds.
  if (typeof method !== "string" || id === undefined) return undefined;
  const parsed = requestSchemas.get(method)?.safeParse(body);
  if (parsed && !parsed.success) {
    const [issue] = parsed.error.issues;
    return { code: ErrorCode.InvalidParams, message: `Invalid params for ${method}: ${issue ? `${issue.path.join(".") || "(the message)"}: ${issue.message}` : "not as the method takes them"}`, id };
  }
  // MCP 2025-11-25, Tools, "Error Handling": an unknown tool is a protocol error, not a tool's result.
  if (method === "tools/call" && !toolNames.has(String(params?.name))) return { code: ErrorCode.InvalidParams, message: `Unknown tool: ${String(params?.name)}`, id };
  // The SDK copies the arguments into a new object, which drops an own `__proto__` key: the tool's
  // strict schema never saw it, and the call ran without it (a draft meant to be scheduled was not).
  const args = (params as { arguments?: unknown } | undefined)?.arguments;
  if (method === "tools/call" && typeof args === "object" && args !== null && Object.hasOwn(args, "__proto__")) {
    return { code: ErrorCode.InvalidParams, message: 'Invalid params for tools/call: arguments: Unrecognized key: "__proto__"', id };
  }
  return undefined;
}

/** `inboxd mcp`: the server on stdin and stdout until stdin ends (the client closed it) or a signal comes. */
export async function serveMcpOverStdio(api: ApiCaller): Promise<void> {
  const server = createMcpServer(api);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  answerRefusals(transport);
  await new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  await server.close();
}

/**
 * The HTTP endpoint's answers (refusalOf) on stdio too. There the SDK answered bad params with
 * -32603 and a schema dump, and a line that was no JSON, or no JSON-RPC message (a batch, an id of
 * 1.5), with nothing at all: the client waited for ever. JSON-RPC 2.0 §5.1: -32700 and -32600,
 * with a null id, as the request's id could not be read.
 */
function answerRefusals(transport: StdioServerTransport): void {
  const reply = (refusal: Refusal) => void transport.send({ jsonrpc: "2.0", id: refusal.id, error: { code: refusal.code, message: refusal.message } } as JSONRPCMessage);
  const toServer = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage) => {
    const refusal = refusalOf(message);
    if (refusal) reply(refusal);
    else toServer?.(message);
  };
  const onError = transport.onerror;
  transport.onerror = (error) => {
    if (error instanceof SyntaxError) reply({ code: ErrorCode.ParseError, message: "Parse error: a line that is no JSON", id: null });
    else if (error instanceof z.ZodError) reply(refusalOf(undefined)!);
    onError?.(error);
  };
}
