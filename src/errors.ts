/**
 * The one error type services throw. It carries what went wrong in words a client can read;
 * the HTTP layer maps `kind` to a status in one place (http/errors.ts).
 */
export type ErrorKind = "malformed" | "unauthorized" | "forbidden" | "not_found" | "conflict" | "too_large" | "unsupported_coding" | "invalid" | "rate_limited" | "unavailable";

export class ServiceError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const notFound = (message: string) => new ServiceError("not_found", message);
export const invalid = (message: string) => new ServiceError("invalid", message);
export const conflict = (message: string) => new ServiceError("conflict", message);
export const unauthorized = (message = "Unauthorized") => new ServiceError("unauthorized", message);
export const forbidden = (message = "Forbidden") => new ServiceError("forbidden", message);
