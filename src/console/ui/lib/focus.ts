import { useEffect, useRef } from "preact/hooks";

let pendingFocus: string | undefined;

/** After the next change of view, focus this element of the new view (a keyboard shortcut's target) rather than the view itself. */
export const focusAfterNavigation = (selector: string) => {
  pendingFocus = selector;
};

/** The element a shortcut asked for, once: the shell focuses it, or the view when there is none. */
export function takePendingFocus(): HTMLElement | null {
  const selector = pendingFocus;
  pendingFocus = undefined;
  return selector ? document.querySelector<HTMLElement>(selector) : null;
}

/** A ref that takes the focus when its element appears: the next thing to answer (a confirmation, a rename field). */
export function useFocusOnMount<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => ref.current?.focus(), []);
  return ref;
}
