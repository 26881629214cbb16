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

const renderValue = (v: unknown) => {
  if (v instanceof Error) return JSON.stringify(v.stack ?? v.message);
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return typeof v === "string" && !/[\s"=]/.test(s) ? s : JSON.stringify(s);
};

export function createLogger(format: "text" | "json", minLevel: LogLevel | "silent", write: (line: string) => void = (l) => process.stderr.write(l + "\n")): Logger {
  const emit = (level: LogLevel, event: string, fields: LogFields = {}) => {
    if (rank[level] < rank[minLevel]) return;
    const time = new Date().toISOString();
    if (format === "json") {
      const plain = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v instanceof Error ? (v.stack ?? v.message) : v]));
      write(JSON.stringify({ time, level, event, ...plain }));
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
