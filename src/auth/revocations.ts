/**
 * The credentials revoked on this node, counted: a request whose credential was found before its
 * body arrived (the body parser asks first, src/http/auth.ts) looks it up again once the body is
 * in when one was revoked meanwhile. A slow upload was carried out 10 s after its key was deleted.
 * Other nodes see a revocation at the next look-up.
 */
export class Revocations {
  private count = 0;

  get current(): number {
    return this.count;
  }

  noted(): void {
    this.count++;
  }
}
