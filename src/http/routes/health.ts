import { Elysia, t } from "elysia";
import type { App } from "../../app";

export const healthRoutes = (app: App) =>
  new Elysia().get("/health", () => ({ healthy: true, environment: app.config.env }), {
    response: t.Object({ healthy: t.Boolean(), environment: t.String() }),
    detail: { summary: "Health check", tags: ["health"] },
  });
