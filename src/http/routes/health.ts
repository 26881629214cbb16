import { Elysia } from "elysia";
import type { App } from "../../app";
import { security } from "../openapi";
import { Health } from "../schemas";

export const healthRoutes = (app: App) =>
  new Elysia().get("/health", () => ({ healthy: true, environment: app.config.env }), {
    response: { 200: Health },
    detail: { summary: "Health check", tags: ["health"], security: security.none },
  });
