/** `/auth`: registration and login, which need no credential, and sign-out, which takes the access token it revokes. */
import { Elysia, t } from "elysia";
import type { App } from "../../app";
import { revokeAccessToken } from "../../auth/access-tokens";
import { login, register } from "../../auth/accounts";
import { accessTokenOf } from "../auth";
import { clientAddress, trustedProxies } from "../client-address";
import { security } from "../openapi";
import { bodyFailures, failures, Login, Registration } from "../schemas";

const text = (description: string) => t.Optional(t.String({ description }));

export const authRoutes = (app: App) => {
  const trusted = trustedProxies(app.config.trustedProxies);
  const clientOf = (request: Request, server: Bun.Server<unknown> | null) => clientAddress(server?.requestIP(request)?.address, request.headers.get("x-forwarded-for"), trusted);
  return new Elysia({ prefix: "/auth", detail: { tags: ["accounts"], security: security.none } })
    .post(
      "/register",
      async ({ body, set, server, request }) => {
        set.status = 201;
        return register(app, {
          firstName: body.firstName ?? body.first_name,
          lastName: body.lastName ?? body.last_name,
          email: body.username ?? body.email,
          password: body.password,
          clientIp: clientOf(request, server),
        });
      },
      {
        body: t.Object({
          firstName: text("required; or first_name"),
          lastName: text("required; or last_name"),
          username: text("the email; required, or email"),
          password: text("at least 8 characters"),
          first_name: text("alias of firstName"),
          last_name: text("alias of lastName"),
          email: text("alias of username"),
        }),
        response: { 201: Registration, ...failures(...bodyFailures, [409, "Email already registered"], [429, "Too many registrations from this address: try again after Retry-After seconds"]) },
        detail: { summary: "Create an account: user, organization, API key, access token and inbox" },
      },
    )
    .post(
      "/login",
      ({ body, server, request }) =>
        login(app, { email: body.username ?? body.email, password: body.password, clientIp: clientOf(request, server) }),
      {
        body: t.Object({ username: text("the email; required, or email"), email: text("alias of username"), password: text("required") }),
        response: { 200: Login, ...failures(...bodyFailures, [401, "Invalid credentials"], [429, "Too many failed logins: try again after Retry-After seconds"]) },
        detail: { summary: "Exchange email and password for an access token (valid 7 days)" },
      },
    )
    .post(
      "/logout",
      async ({ headers }) => {
        await revokeAccessToken(app.store, accessTokenOf(headers.authorization, "by /auth/logout"), app.clock.now());
        app.revocations.noted();
        return { success: true };
      },
      {
        response: { 200: t.Object({ success: t.Literal(true) }, { description: "Signed out: the token no longer works" }), ...failures([401, "Missing, malformed, unknown or expired access token (signed out already, or expired: cleared all the same)"]) },
        detail: { summary: "Sign out: revoke the access token the request carries, at once", security: security.accessToken },
      },
    );
};
