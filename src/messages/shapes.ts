/**
 * Parts of a message as the API shows them in JSON, shared with the console's browser code
 * (src/console/ui/api/types.ts): types only and no imports, so that both sides compile it.
 */
export interface Attachment {
  /** Stable per attachment: `GET /v1/inboxes/{inboxId}/messages/{messageId}/attachments/{id}` downloads it. */
  id: string;
  name?: string;
  contentType?: string;
  size: number;
  contentId?: string;
  inline: boolean;
  /** Base64. */
  content: string;
}

export interface Delivery {
  recipient: string;
  status: string;
  attempts: number;
  lastResponse?: string;
  /** When the next try is due; absent once the delivery is final. */
  nextAttemptAt?: string;
  /**
   * While queued: when the last try falls due should every try fail, the recipient bouncing when it
   * does (the next try plus the retry delays still to come; src/outbound/policy.ts lastTryDueAt).
   */
  expiresAt?: string;
  updatedAt: string;
}
