import type { Logger } from "../log";

/**
 * The credentials revoked on this node. Counted: a request whose credential was found before its
 * body arrived (the body parser asks first, src/http/auth.ts) looks it up again once the body is
 * in when one was revoked meanwhile (a slow upload was carried out 10 s after its key was
 * deleted). Told per organization to what still serves an API key's earlier request (its event
 * streams, its large downloads), which looks its key up again at once. Other nodes see a
 * revocation at their next look-up.
 */
export class Revocations {
  private count = 0;
  private readonly listeners: ((organizationId: string) => void)[] = [];

  constructor(private readonly log: Logger) {}

  get current(): number {
    return this.count;
  }

  /** A credential was revoked: an organization's API key, or (without one) a user's access token. */
  noted(organizationId?: string): void {
    this.count++;
    if (organizationId === undefined) return;
    // Each told whatever another does: the revocation is committed, and its answer is 200.
    for (const listener of this.listeners) {
      try {
        listener(organizationId);
      } catch (error) {
        this.log.error("a revocation could not be told to what serves the key's requests", { organizationId, error });
      }
    }
  }

  /** `listener` hears of each revocation of an organization's API key. */
  onApiKeyRevoked(listener: (organizationId: string) => void): void {
    this.listeners.push(listener);
  }
}
