/** Event ids in order across restarts and clock steps: what a stream's `Last-Event-ID` resumes after. */
import { newId } from "../ids";

const EVENT_ID = /^evt_([0-9a-f]{24})$/;

/**
 * An event id after `newest` (ids are `evt_` and 24 hex digits, src/ids.ts): a new one, or, when
 * the clock has stepped back below it (an NTP correction, a restart on a clock set back), the next
 * one in order, so that a client resuming after `newest` still reads it.
 */
export function eventIdAfter(newest: string | undefined): string {
  const id = newId("evt");
  const previous = newest && EVENT_ID.exec(newest);
  if (!previous || id > newest!) return id;
  return `evt_${(BigInt(`0x${previous[1]}`) + 1n).toString(16).padStart(24, "0")}`;
}
