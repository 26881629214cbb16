import { useEffect, useRef } from "preact/hooks";

/** A ref that takes the focus when its element appears: the next thing to answer (a confirmation, a rename field). */
export function useFocusOnMount<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => ref.current?.focus(), []);
  return ref;
}
