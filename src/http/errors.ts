/** The one error mapper: every failure leaves as `{error: string}` with its status; 5xx are logged, never detailed. */
import { ValidationError } from "elysia";
import { ServiceError, type ErrorKind } from "../errors";
import { refusalRun, type Logger } from "../log";
import { driverReason, isStoreFailing, isStoreFull, isStoreUnavailable, STORE_FULL_RETRY_AFTER_SECONDS, STORE_RETRY_AFTER_SECONDS } from "../store/unavailable";

const statusOf: Record<ErrorKind, number> = {
  malformed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_coding: 415,
  invalid: 422,
  rate_limited: 429,
  unavailable: 503,
};

export interface ErrorReply {
  status: number;
  error: string;
  headers?: Record<string, string>;
}

/**
 * "to[0]: must be an email address" rather than TypeBox's whole report: the field, then what is
 * wrong. Fields are named as the services name them in their own 422s, for the body and the
 * query alike: `to`, `to[0]`, `attachments[2].content`, `per`; the part itself (`body`) only when
 * the value as a whole is wrong.
 */
function describeValidation(e: ValidationError): string {
  const first = e.valueError ?? e.all[0];
  const where = e.type === "body" ? "body" : e.type;
  if (!first) return `Invalid ${where}`;
  const path = fieldName(first.path);
  const message = (first as { schema?: { error?: string } }).schema?.error ?? first.message;
  return `${path || where}: ${message}`;
}

/** A JSON Pointer (RFC 6901) as a field name: `/attachments/2/content` → `attachments[2].content`. */
export function fieldName(pointer: string): string {
  let name = "";
  for (const token of pointer.split("/").slice(1)) {
    const key = token.replaceAll("~1", "/").replaceAll("~0", "~");
    name += /^(0|[1-9][0-9]*)$/.test(key) ? `[${key}]` : name ? `.${key}` : key;
  }
  return name;
}

/** RFC 9110 §15.5.2: a 401 names the scheme that would work; every credential here is a bearer token (RFC 6750 §3). */
const bearerChallenge = { "www-authenticate": 'Bearer realm="inboxd"' };

export function toErrorReply(code: string | number, error: unknown, log: Logger, route: string): ErrorReply {
  // Elysia wraps whatever the body parser throws in a ParseError; our own refusal is its cause.
  if (code === "PARSE" && (error as Error).cause instanceof ServiceError) error = (error as Error).cause;
  if (error instanceof ServiceError) return { status: statusOf[error.kind], error: error.message, headers: error.kind === "unauthorized" ? { ...bearerChallenge, ...error.headers } : error.headers };
  if (error instanceof ValidationError) return { status: 422, error: describeValidation(error) };
  if (code === "NOT_FOUND") return { status: 404, error: "Not found" };
  if (code === "PARSE") return { status: 400, error: "Malformed JSON body" };
  if (isStoreUnavailable(error)) {
    unreachable((failedRequests) => log.warn("request failed: the database is unreachable", { route, error: (error as Error).message, ...(failedRequests ? { failedRequests } : {}) }));
    return { status: 503, error: "The database is unreachable for a moment; try again shortly", headers: { "retry-after": String(STORE_RETRY_AFTER_SECONDS) } };
  }
  if (isStoreFailing(error)) {
    const why = isStoreFull(error) ? "the database's disk is full" : "the database's storage failed";
    storageFailing((failedRequests) => log.error(`request failed: ${why}`, { route, error: driverReason(error), ...(failedRequests ? { failedRequests } : {}) }));
    return { status: 503, error: "The server cannot store anything right now; try again later", headers: { "retry-after": String(STORE_FULL_RETRY_AFTER_SECONDS) } };
  }
  log.error("request failed", { route, error });
  return { status: 500, error: "Internal server error" };
}

/** Requests refused while the database is out of reach, or its storage failing (a full disk): the first logged, then one line a minute with their count. */
const unreachable = refusalRun();
const storageFailing = refusalRun();
