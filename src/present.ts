/**
 * Shapes shared by every resource the API and the webhooks show: the identifier twice (`id` and
 * `_id`, for existing clients) and optional fields left out rather than null (docs/api.md).
 */
export function resource<T extends { id: string }>(fields: T): T & { _id: string } {
  const out: Record<string, unknown> = {};
  // for-in rather than Object.entries: no array per field, on every resource of every response.
  for (const key in fields) {
    const value = fields[key];
    if (value !== null && value !== undefined) out[key] = value;
  }
  out._id = fields.id;
  return out as T & { _id: string };
}
