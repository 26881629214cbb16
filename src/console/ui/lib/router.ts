/**
 * Hash routes (`#/inboxes/inb_1/threads/thr_2`): the server serves one page at `/`, so every view
 * has a link of its own without server routes, and reload and back keep working.
 */
import { useEffect, useState } from "preact/hooks";

const segmentsOf = (hash: string) =>
  hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((segment) => {
      // A malformed escape (a link cut short) is kept as written: the view says it does not exist.
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    });

/** The current route's path segments, re-rendering on every change. */
export function useRoute(): string[] {
  const [segments, setSegments] = useState(() => segmentsOf(location.hash));
  useEffect(() => {
    const update = () => setSegments(segmentsOf(location.hash));
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return segments;
}

/** `href("inboxes", id)` → `#/inboxes/<id>`, each segment encoded. */
export const href = (...segments: string[]) => `#/${segments.map(encodeURIComponent).join("/")}`;

export const navigate = (...segments: string[]) => {
  location.hash = href(...segments);
};
