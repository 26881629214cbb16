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
 * server chose this transaction to end a deadlock or a serialization conflict); 57014 and 55P03
 * (a statement deadline, the pool's own (./connection.ts) or an operator's, or lock_timeout
 * ended it, mostly waiting for a lock another held); and 25P03 (the server ended a transaction
 * left idle: this node was frozen inside it): not this statement's fault either, and tried again
 * the same way.
 */
const UNAVAILABLE_STATES = /^(08...|57P0[123]|53300|25006|40P01|40001|57014|55P03|25P03)$/;

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
 * Seconds a statement outside a transaction, or a transaction from its connection until its
 * COMMIT is sent, may wait for the server. The connect timeout bounds only new connections: on
 * open ones, a server that stopped answering (a partition, a frozen host) held each request and
 * SMTP transaction for as long as it lasted, with nothing logged.
 */
export const ANSWER_DEADLINE_SECONDS = 10;
/**
 * Seconds a transaction may wait for one of the pool's connections, before its answer deadline
 * starts: a transaction that waited behind others is not failed for their time (21 transactions
 * holding their connection 6 s each over 20 connections all commit), but the wait is bounded, as
 * the connections of a server that stopped answering never come back.
 */
export const POOL_WAIT_SECONDS = ANSWER_DEADLINE_SECONDS;

/** What a transaction tells its deadline (answeredInTime). */
export interface Deadline {
  /** It has its connection: the wait for the pool ends (throws if it took too long), the answer deadline starts. */
  connected(): void;
  /** Throws once the deadline has passed: the transaction is then rolled back, never committed after its caller was told it failed. */
  assertInTime(): void;
  /** Its COMMIT is about to be sent: throws as assertInTime, else the deadline no longer applies (what the server answers is the outcome). */
  committing(): void;
}

/**
 * `run`'s outcome, or StoreUnavailableError once `seconds` pass without it: the wait for a
 * connection first (`poolWaitSeconds`, until `connected()`, when run says so), then the answer.
 */
export function answeredInTime<T>(run: (deadline: Deadline) => Promise<T>, { poolWaitSeconds }: { poolWaitSeconds?: number } = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired: string | undefined;
    let timer: Timer | undefined;
    const arm = (seconds: number, why: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        expired = why;
        reject(new StoreUnavailableError(new Error(why)));
      }, seconds * 1000);
    };
    const deadline: Deadline = {
      connected() {
        deadline.assertInTime();
        arm(ANSWER_DEADLINE_SECONDS, `PostgreSQL did not answer within ${ANSWER_DEADLINE_SECONDS} s`);
      },
      assertInTime() {
        if (expired) throw new StoreUnavailableError(new Error(`${expired}: rolled back`));
      },
      committing() {
        deadline.assertInTime();
        clearTimeout(timer);
      },
    };
    if (poolWaitSeconds === undefined) deadline.connected();
    else arm(poolWaitSeconds, `no connection to PostgreSQL within ${poolWaitSeconds} s`);
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

/** A transaction on `db` whose wait for a connection and for the server's answers are bounded (answeredInTime): rolled back, never committed, once its caller was told it failed. */
export function transactionInTime<Tx, T>(db: { transaction<R>(work: (tx: Tx) => Promise<R>): Promise<R> }, work: (tx: Tx, deadline: Deadline) => Promise<T>): Promise<T> {
  return answeredInTime(
    (deadline) =>
      db.transaction(async (tx) => {
        deadline.connected();
        const value = await work(tx, deadline);
        deadline.committing();
        return value;
      }),
    { poolWaitSeconds: POOL_WAIT_SECONDS },
  );
}

/**
 * Each method of `aggregate` with its connection failures turned into StoreUnavailableError, and
 * its wait for the server bounded (ANSWER_DEADLINE_SECONDS) unless `inTime` is false: for methods
 * that bound their own transactions (transactionInTime).
 */
export function reportingUnavailable<T extends object>(aggregate: T, { inTime = true }: { inTime?: boolean } = {}): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(aggregate)) {
    wrapped[name] =
      typeof member === "function"
        ? async (...args: unknown[]) => {
            try {
              const call = async () => (member as (...a: unknown[]) => unknown).apply(aggregate, args);
              return await (inTime ? answeredInTime(call) : call());
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
