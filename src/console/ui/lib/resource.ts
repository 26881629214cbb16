/**
 * Loading API data into a view: not yet loaded (no data, no error), failed, or loaded; a reload
 * after changes, and for live views (new mail, webhook attempts) a reload on each event that
 * concerns them, or polling while the event stream is down. A poll keeps the shown data on
 * failure and pauses while the tab is hidden.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { isLive, listen, type LiveEvent } from "../api/events";
import { messageOf } from "../api/http";

/** Events come in bursts (a batch of mail, a send's deliveries): one reload for a burst, not one per event. */
const liveReloadDelayMs = 100;

export interface LiveOptions {
  /** Poll this often (while the event stream is down, when `liveWhen` is given). */
  pollMs?: number;
  /** The events that change what the view shows: each reloads it, and it polls only while the stream is down. */
  liveWhen?: (event: LiveEvent) => boolean;
}

export interface Resource<T> {
  data?: T;
  error?: string;
  reload(): void;
}

export function useResource<T>(load: () => Promise<T>, deps: unknown[], options: LiveOptions = {}): Resource<T> {
  // What the state was loaded for: after a change (another page, another search) the old data is not shown as the new.
  const key = JSON.stringify(deps);
  const [state, setState] = useState<{ key?: string; data?: T; error?: string }>({});
  const generation = useRef(0);
  const latest = useRef(load);
  latest.current = load;
  const concerns = useRef(options.liveWhen);
  concerns.current = options.liveWhen;

  const run = useCallback((forKey: string, quiet: boolean) => {
    const mine = ++generation.current;
    if (!quiet) setState({ key: forKey });
    latest.current().then(
      (data) => mine === generation.current && setState({ key: forKey, data }),
      (error) => mine === generation.current && setState((previous) => ({ key: forKey, data: quiet ? previous.data : undefined, error: messageOf(error) })),
    );
  }, []);

  useEffect(() => {
    run(key, false);
    if (!options.pollMs) return () => void generation.current++;
    let pending: ReturnType<typeof setTimeout> | undefined;
    const reloadSoon = () => {
      pending ??= setTimeout(() => {
        pending = undefined;
        run(key, true);
      }, liveReloadDelayMs);
    };
    const stopListening = options.liveWhen ? listen({ onEvent: (event) => concerns.current?.(event) && reloadSoon(), onStale: reloadSoon }) : undefined;
    const timer = setInterval(() => document.hidden || (stopListening && isLive()) || run(key, true), options.pollMs);
    return () => {
      clearInterval(timer);
      clearTimeout(pending);
      stopListening?.();
      generation.current++;
    };
  }, [key]);

  const current = state.key === key ? state : {};
  return { data: current.data, error: current.error, reload: () => run(key, true) };
}

/** Runs an action from a button or form: its busy state and its error in words. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (e) {
      setError(messageOf(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}
