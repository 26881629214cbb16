import type { App } from "../app";

/**
 * Options for a `Bun.serve` of inboxd's own beside the API (the ACME challenges, the metrics
 * address): Bun's development default answers an exception with its error page (the stack, the
 * source around it, the working directory); this answers the API's 500 and logs it instead.
 */
export function withoutErrorPages(app: App, listener: string) {
  return {
    development: false,
    error(error: Error) {
      app.log.error(`${listener}: request failed`, { error });
      return Response.json({ error: "Internal server error" }, { status: 500 });
    },
  };
}
