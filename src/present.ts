/**
 * Shapes shared by every resource the API and the webhooks show: the identifier twice (`id` and
 * `_id`, for existing clients) and optional fields left out rather than null (contract.md).
 */
export function resource<T extends { id: string }>(fields: T): T & { _id: string } {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== null && value !== undefined) out[key] = value;
  out._id = fields.id;
  return out as T & { _id: string };
}
