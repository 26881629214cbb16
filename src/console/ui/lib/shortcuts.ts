/**
 * Keys of a mail client, as Gmail and Fastmail have them: j and k move through the list, Enter
 * opens (the focused link's own), c composes, r replies, / searches, ? lists them. Ignored while
 * typing in a field and with Ctrl, Alt or Meta, so the browser's own keys stay.
 */
import { useEffect } from "preact/hooks";
import { focusAfterNavigation } from "./focus";
import { navigate } from "./router";

export const shortcuts: [key: string, what: string][] = [
  ["j", "next message or inbox in the list"],
  ["k", "previous one"],
  ["Enter", "open it"],
  ["c", "compose a new message"],
  ["r", "reply to the open thread or message"],
  ["/", "search the inbox's messages"],
  ["?", "this list of keys"],
];

const typing = (target: EventTarget | null) => target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));

/** Moves the focus to the next or previous list item; from outside the list, to the open one or the first (j) or last (k). */
function moveInList(step: 1 | -1) {
  const items = [...document.querySelectorAll<HTMLElement>("[data-mail-item]")];
  if (!items.length) return;
  const focused = items.indexOf(document.activeElement as HTMLElement);
  const open = items.findIndex((item) => item.getAttribute("aria-current") === "true");
  const from = focused >= 0 ? focused : open;
  const next = from < 0 ? (step === 1 ? 0 : items.length - 1) : Math.min(items.length - 1, Math.max(0, from + step));
  items[next]!.focus();
  items[next]!.scrollIntoView({ block: "nearest" });
}

/** Focuses the element, in this view or, after a change of route, in the next. */
function focusOrGoTo(selector: string, route: string[], ...segments: string[]) {
  const element = document.querySelector<HTMLElement>(selector);
  if (element && route.join("/") === segments.join("/")) return element.focus();
  focusAfterNavigation(selector);
  navigate(...segments);
}

/** The inbox the keys act on: the one open, else the focused or first of the inbox list. */
function currentInboxId(route: string[]): string | undefined {
  if (route[0] === "inboxes" && route[1]) return route[1];
  const listed = (document.activeElement as HTMLElement | null)?.dataset.inboxId ?? document.querySelector<HTMLElement>("[data-inbox-id]")?.dataset.inboxId;
  return listed;
}

export function useShortcuts(route: string[], showHelp: () => void) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
      const inboxId = currentInboxId(route);
      if (event.key === "j" || event.key === "k") moveInList(event.key === "j" ? 1 : -1);
      else if (event.key === "?") showHelp();
      else if (event.key === "c" && inboxId) navigate("inboxes", inboxId, "compose");
      else if (event.key === "r" && document.querySelector(".reply textarea")) document.querySelector<HTMLElement>(".reply textarea")!.focus();
      else if (event.key === "/" && inboxId) focusOrGoTo("#mail-search", route, "inboxes", inboxId, "messages");
      else return;
      event.preventDefault();
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [route.join("/")]);
}
