/**
 * Loading API data into a view: not yet loaded (no data, no error), failed, or loaded; a reload
 * after changes, and polling for live views (new mail, webhook attempts). A poll keeps the shown
 * data on failure and pauses while the tab is hidden.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { messageOf } from "../api/http";

export interface Resource<T> {
  data?: T;
  error?: string;
  reload(): void;
}

export function useResource<T>(load: () => Promise<T>, deps: unknown[], options: { pollMs?: number } = {}): Resource<T> {
  // What the state was loaded for: after a change (another page, another search) the old data is not shown as the new.
  const key = JSON.stringify(deps);
  const [state, setState] = useState<{ key?: string; data?: T; error?: string }>({});
  const generation = useRef(0);
  const latest = useRef(load);
  latest.current = load;

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
    const timer = setInterval(() => document.hidden || run(key, true), options.pollMs);
    return () => {
      clearInterval(timer);
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
