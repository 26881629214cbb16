// Which PostgreSQL failures are the database being out of reach for a moment (503 and 451, the
// same call tried again later) rather than the statement's own fault (a 500 to look into).
import { expect, test } from "bun:test";
import { isConnectionFailure } from "../../src/store/postgres/unavailable";

const serverError = (errno: string, message: string) => new Error("Failed query: select 1\nparams: ", { cause: Object.assign(new Error(message), { errno }) });

test("a statement deadline, a lock_timeout or an idle-in-transaction timeout ending a statement or a session is out of reach for a moment, as a deadlock or a shutdown is", () => {
  for (const [errno, message] of [
    ["57014", "canceling statement due to statement timeout"],
    ["55P03", "canceling statement due to lock timeout"],
    ["25P03", "terminating connection due to idle-in-transaction timeout"],
    ["40P01", "deadlock detected"],
    ["57P01", "terminating connection due to administrator command"],
  ]) {
    expect({ errno, unavailable: isConnectionFailure(serverError(errno!, message!)) }).toEqual({ errno, unavailable: true });
  }
  for (const [errno, message] of [
    ["23505", "duplicate key value violates unique constraint"],
    ["42P01", 'relation "api_keys" does not exist'],
  ]) {
    expect({ errno, unavailable: isConnectionFailure(serverError(errno!, message!)) }).toEqual({ errno, unavailable: false });
  }
});
