/** Structured logs: one line per event, text for people or JSON for collectors (INBOXD_LOG_FORMAT). */
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

const rank = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

/**
 * A string logged is cut to this many characters: a value a stranger chose (a TLS report's
 * domains, a header) is one field of one line, not megabytes of it.
 */
const MAX_VALUE_CHARS = 4096;
const cut = (text: string) => (text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}… (${text.length - MAX_VALUE_CHARS} more characters)` : text);
/**
 * A failed statement's error (drizzle's "Failed query: ... params: ...") carries the values it
 * wrote: a message's text, a secret sealed or not. They stay out of the log.
 */
const withoutQueryParams = (text: string) => text.replace(/^params: [^]*?(?=\n\s+at |(?![^]))/m, "params: (left out)");
/**
 * The errors an error wraps, a line each with its code: drizzle's "Failed query" says only which
 * statement failed, its cause why (PostgreSQL's "canceling statement due to statement timeout",
 * "relation ... does not exist").
 */
function causesOf(error: Error): string {
  let text = "";
  for (let e = error.cause, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const codes = [(e as { code?: unknown }).code, (e as { errno?: unknown }).errno].filter((c) => typeof c === "string" || typeof c === "number");
    text += `\ncaused by: ${e.message}${codes.length ? ` (${codes.join(", ")})` : ""}`;
  }
  return text;
}
/** A value as logged: an error's stack or message and its causes, a string, or an object's JSON, each cut. */
const bounded = (v: unknown): unknown => {
  if (v instanceof Error) return cut(withoutQueryParams((v.stack ?? v.message) + causesOf(v)));
  if (typeof v === "string") return cut(v);
  if (v !== null && typeof v === "object") {
    const json = JSON.stringify(v);
    return json !== undefined && json.length > MAX_VALUE_CHARS ? cut(json) : v;
  }
  return v;
};
/**
 * What JSON leaves raw but a terminal acts on: DEL, the C1 controls (U+009B is CSI, as ESC [) and
 * the line and paragraph separators. Escaped as JSON escapes the C0 controls, so that a value
 * cannot move the cursor over the lines before it and forge one.
 */
const terminalControls = /[\x7f-\x9f\u2028\u2029]/g;
const escapeControls = (json: string) => json.replace(terminalControls, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

const renderValue = (v: unknown) => {
  if (v instanceof Error) return escapeControls(JSON.stringify(bounded(v)));
  const value = bounded(v);
  // A number, true, false or null as JSON writes it; a value with a space, quote, = or any control
  // character (an object's JSON has quotes) as a JSON string.
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return !/[\s"=\x00-\x1f\x7f-\x9f\u2028\u2029]/.test(s) ? s : escapeControls(JSON.stringify(s));
};

export function createLogger(format: "text" | "json", minLevel: LogLevel | "silent", write: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger {
  const emit = (level: LogLevel, event: string, fields: LogFields = {}) => {
    if (rank[level] < rank[minLevel]) return;
    const time = new Date().toISOString();
    if (format === "json") {
      const plain = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, bounded(v)]));
      write(escapeControls(JSON.stringify({ time, level, event, ...plain })));
    } else {
      const rest = Object.entries(fields).map(([k, v]) => `${k}=${renderValue(v)}`).join(" ");
      write(`${time} ${level.toUpperCase().padEnd(5)} ${event}${rest ? " " + rest : ""}`);
    }
  };
  return {
    debug: (e, f) => emit("debug", e, f),
    info: (e, f) => emit("info", e, f),
    warn: (e, f) => emit("warn", e, f),
    error: (e, f) => emit("error", e, f),
  };
}

/**
 * A run of failures of a task retried every few hundred milliseconds, which fails the same way
 * until someone acts (a full disk): logged without a line per try. The first failure of a run is
 * logged, then at most one per `everyMs` with the run's count so far; a success ends the run.
 */
export interface FailureRun {
  /** Counts a failure; `write` logs it when it is due, given the run's failures so far (undefined for the first). */
  failed(write: (failuresSoFar: number | undefined) => void): void;
  /** The task worked: how many failures the run that it ends had (0: none, nothing to log). */
  succeeded(): number;
}

export function failureRun(everyMs = 60_000): FailureRun {
  let run: { failures: number; loggedAt: number } | undefined;
  return {
    failed(write) {
      const now = performance.now();
      run ??= { failures: 0, loggedAt: -Infinity };
      run.failures++;
      if (now - run.loggedAt < everyMs) return;
      run.loggedAt = now;
      write(run.failures > 1 ? run.failures : undefined);
    },
    succeeded() {
      const failures = run?.failures ?? 0;
      run = undefined;
      return failures;
    },
  };
}

/**
 * A FailureRun of refusals for one cause (the database out of reach, its storage failing) across
 * requests and SMTP sessions, whose successes nothing reports: a refusal after `gapMs` without
 * one starts another run. One line per refusal, each with the failed statement, was thousands
 * of lines in a few minutes of an outage.
 */
export function refusalRun(gapMs = 10 * 60_000): FailureRun["failed"] {
  const run = failureRun();
  let lastAt = -Infinity;
  return (write) => {
    if (performance.now() - lastAt > gapMs) run.succeeded();
    lastAt = performance.now();
    run.failed(write);
  };
}

/** A FailureRun of one task's tries, logged as `event` with `failedTries`, and as `event: works again` once it does. */
export function recurringFailureLog(log: Logger, level: "warn" | "error", event: string): { failed(fields: LogFields): void; succeeded(): void } {
  const run = failureRun();
  return {
    failed: (fields) => run.failed((failedTries) => log[level](event, failedTries ? { ...fields, failedTries } : fields)),
    succeeded() {
      const failedTries = run.succeeded();
      if (failedTries) log.info(`${event}: works again`, { failedTries });
    },
  };
}
