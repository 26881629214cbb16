/** Which mail domains this server receives for: the service's own, and custom domains whose MX verified. */
import type { App } from "../app";

export function isHostedDomain(app: App, domain: string): boolean {
  return domain.toLowerCase() === app.config.mailDomain.toLowerCase();
}
