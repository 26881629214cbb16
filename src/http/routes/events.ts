/** `GET /v1/events`: the organization's live event stream (Server-Sent Events), resumable by event id. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { eventNames } from "../../events/names";
import { apiKeyGuard, bearerToken } from "../auth";
import { security } from "../openapi";
import { bytes, failures } from "../schemas";

const streamHeaders = {
  "content-type": "text/event-stream",
  "cache-control": "no-store",
  // nginx would otherwise buffer the stream and deliver events late, in bursts.
  "x-accel-buffering": "no",
};

export const eventRoutes = (app: App) =>
  new Elysia({ prefix: "/v1", detail: { tags: ["events"], security: security.apiKey } }).use(apiKeyGuard(app)).get(
    "/events",
    async ({ organizationId, query, headers, request }) => {
      // An EventSource reconnecting sends the id it saw last: newer than the ?since of its URL.
      const lastEventId = headers["last-event-id"];
      const resumeAfter = lastEventId !== undefined ? { id: lastEventId.trim(), field: "Last-Event-ID" } : query.since !== undefined ? { id: query.since, field: "since" } : undefined;
      const apiKey = bearerToken(request.headers.get("authorization") ?? undefined);
      const body = await app.eventStreams.start({ organizationId, apiKey, resumeAfter, types: query.events, inboxId: query.inboxId });
      return new Response(body, { headers: streamHeaders });
    },
    {
      // Every other header stays: the guard reads Authorization.
      headers: t.Object({ "last-event-id": t.Optional(t.String({ description: "Resume after this event id (what an EventSource sends when it reconnects); wins over `since`" })) }, { additionalProperties: true }),
      query: t.Object({
        since: t.Optional(t.String({ description: "Resume after this event id; without it (or Last-Event-ID) the stream starts with the next new event" })),
        events: t.Optional(t.String({ description: `Only these event names, comma-separated, from: ${eventNames.join(", ")}` })),
        inboxId: t.Optional(t.String({ description: "Only the events of this inbox" })),
      }),
      response: {
        200: bytes(
          "text/event-stream",
          "Server-Sent Events: `retry:` first, then one event per stored event (`id:` its id, `event:` its name, `data:` the webhook body as JSON), a `: ping` comment when quiet, and a `reset` event first when the resume id is older than the retention period",
        ),
        ...failures(401, [404, "Inbox not found"], [422, "A malformed resume id or an unknown event name: `error` says which"], [429, "The organization holds its limit of open streams (INBOXD_EVENT_STREAMS_PER_ORG): retry after Retry-After seconds"], [503, "The server is stopping: reconnect shortly"]),
      },
      detail: { summary: "Stream the organization's events live (Server-Sent Events), resumable with Last-Event-ID or since" },
    },
  );
