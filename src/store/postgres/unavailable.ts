/**
 * Which failures of Bun.sql mean "the database cannot be reached right now" rather than "this
 * statement is wrong": they become the engine-neutral StoreUnavailableError (../unavailable.ts),
 * which SMTP answers with 451 4.3.0 and the API with 503 and Retry-After. The pool heals by
 * itself: a refused or closed connection is opened anew by the next statement.
 */
import { StoreUnavailableError } from "../unavailable";

/** The driver's own codes for a connection that could not be had or was lost. */
const CONNECTION_CODES = new Set([
  "ERR_POSTGRES_CONNECTION_CLOSED",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_IDLE_TIMEOUT",
  "ERR_POSTGRES_LIFETIME_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
]);

/**
 * SQLSTATEs of a server going away or not taking connections (PostgreSQL, Appendix A): class 08
 * (connection exception), 57P01-57P03 (shut down by an administrator, crashed, cannot connect
 * now: starting, stopping, recovering), 53300 (too many connections), 25006 (a read-only
 * transaction: a failover left this node on a standby for a moment); 40P01 and 40001 (the
 * server chose this transaction to end a deadlock or a serialization conflict); and 57014 and
 * 55P03 (an operator's statement_timeout or lock_timeout ended it, waiting for a lock another
 * held): not this statement's fault either, and tried again the same way.
 */
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300|25006|40P01|40001|57014|55P03)$/;

/** Whether `error` (or the driver error drizzle wraps as its cause) is the database being out of reach. */
export function isConnectionFailure(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const { code, errno } = e as { code?: unknown; errno?: unknown };
    if (typeof code === "string" && CONNECTION_CODES.has(code)) return true;
    if (typeof errno === "string" && UNAVAILABLE_STATES.test(errno)) return true;
  }
  return false;
}

/** The error to throw for `error`: StoreUnavailableError for a connection failure, else itself. */
export const unavailableOr = (error: unknown): unknown => (error instanceof StoreUnavailableError || !isConnectionFailure(error) ? error : new StoreUnavailableError(error));

/**
 * Seconds a statement outside a transaction, or a transaction until its COMMIT is sent, may wait
 * for the server, from the pool's connection on. The connect timeout bounds only new connections:
 * on open ones, a server that stopped answering (a partition, a frozen host) held each request and
 * SMTP transaction for as long as it lasted, with nothing logged.
 */
export const ANSWER_DEADLINE_SECONDS = 10;

/** What a transaction tells its deadline (answeredInTime). */
export interface Deadline {
  /** Throws once the deadline has passed: the transaction is then rolled back, never committed after its caller was told it failed. */
  assertInTime(): void;
  /** Its COMMIT is about to be sent: throws as assertInTime, else the deadline no longer applies (what the server answers is the outcome). */
  committing(): void;
}

/** `run`'s outcome, or StoreUnavailableError once `seconds` pass without it. */
export function answeredInTime<T>(run: (deadline: Deadline) => Promise<T>, seconds = ANSWER_DEADLINE_SECONDS): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      reject(new StoreUnavailableError(new Error(`PostgreSQL did not answer within ${seconds} s`)));
    }, seconds * 1000);
    const deadline: Deadline = {
      assertInTime() {
        if (expired) throw new StoreUnavailableError(new Error(`PostgreSQL did not answer within ${seconds} s: rolled back`));
      },
      committing() {
        deadline.assertInTime();
        clearTimeout(timer);
      },
    };
    run(deadline).then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Each method of `aggregate` with its connection failures turned into StoreUnavailableError, and its wait for the server bounded (ANSWER_DEADLINE_SECONDS). */
export function reportingUnavailable<T extends object>(aggregate: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(aggregate)) {
    wrapped[name] =
      typeof member === "function"
        ? async (...args: unknown[]) => {
            try {
              return await answeredInTime(async () => (member as (...a: unknown[]) => unknown).apply(aggregate, args));
            } catch (error) {
              throw unavailableOr(error);
            }
          }
        : member;
  }
  return wrapped as T;
}

/** Every aggregate of `aggregates` reporting connection failures so (outside transactions: inside one, the transaction reports). */
export function aggregatesReportingUnavailable<T extends object>(aggregates: T): T {
  return Object.fromEntries(Object.entries(aggregates).map(([name, aggregate]) => [name, reportingUnavailable(aggregate as object)])) as T;
}
