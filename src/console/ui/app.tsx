/** The console: the sign-in page without a session, else the navigation and the view of the route. */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { checkToken, signOut, useSession, type Session } from "./api/session";
import type { CreatedApiKey } from "./api/types";
import { ShownOnce } from "./components/common";
import { takePendingFocus } from "./lib/focus";
import { href, useRoute } from "./lib/router";
import { shortcuts, useShortcuts } from "./lib/shortcuts";
import { useTheme } from "./lib/theme";
import { AccessRules } from "./views/access-rules";
import { ApiKeys } from "./views/api-keys";
import { Compose } from "./views/compose";
import { DomainView } from "./views/domain";
import { Domains } from "./views/domains";
import { Inboxes } from "./views/inboxes";
import { Mailbox } from "./views/mailbox";
import { MessagePage } from "./views/message";
import { Outbound } from "./views/outbound";
import { WebhookView } from "./views/webhook";
import { Webhooks } from "./views/webhooks";
import { SignIn } from "./views/sign-in";

const sections = [
  ["inboxes", "Inboxes"],
  ["outbound", "Outbound"],
  ["access", "Access rules"],
  ["webhooks", "Webhooks"],
  ["domains", "Domains"],
  ["keys", "API keys"],
] as const;

/** The access token is checked once a minute, so an expired one ends the session even while the API key works. */
const tokenCheckMs = 60_000;

function View({ route }: { route: string[] }) {
  const [section, id, sub, subId] = route;
  if (section === "inboxes" && id) {
    if (sub === "messages" && subId) return <MessagePage inboxId={id} messageId={subId} />;
    if (sub === "compose") return <Compose inboxId={id} />;
    return <Mailbox inboxId={id} tab={sub === "messages" ? "messages" : "threads"} threadId={sub === "threads" ? subId : undefined} />;
  }
  if (section === "outbound") return <Outbound />;
  if (section === "access") return <AccessRules />;
  if (section === "webhooks") return id ? <WebhookView webhookId={id} /> : <Webhooks />;
  if (section === "domains") return id ? <DomainView domainId={id} /> : <Domains />;
  if (section === "keys") return <ApiKeys />;
  return <Inboxes />;
}

/** The keyboard shortcuts, in a modal dialog (Escape or the button closes it). */
function ShortcutsHelp({ onClose }: { onClose(): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => dialog.current?.showModal(), []);
  return (
    <dialog ref={dialog} class="shortcuts card" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <dl>
        {shortcuts.map(([key, what]) => (
          <div key={key}>
            <dt>
              <kbd>{key}</kbd>
            </dt>
            <dd>{what}</dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={() => dialog.current?.close()}>
        Close
      </button>
    </dialog>
  );
}

function ThemeToggle() {
  const [theme, toggle] = useTheme();
  return (
    <button type="button" class="theme-toggle" aria-pressed={theme === "dark"} onClick={toggle}>
      Dark theme
    </button>
  );
}

function Shell({ session, route, children }: { session: Session; route: string[]; children: ComponentChildren }) {
  const main = useRef<HTMLElement>(null);
  const path = route.join("/");
  // A new view takes the focus, so keyboard and screen-reader users start at its content.
  useEffect(() => (takePendingFocus() ?? main.current)?.focus({ preventScroll: true }), [path]);
  useEffect(() => {
    const timer = setInterval(() => void checkToken().catch(() => undefined), tokenCheckMs);
    return () => clearInterval(timer);
  }, []);
  const [helpShown, setHelpShown] = useState(false);
  useShortcuts(route, () => setHelpShown(true));
  const current = route[0] ?? "inboxes";
  return (
    <>
      <a class="skip" href="#main" onClick={(event) => (event.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href("inboxes")}>
          inboxd
        </a>
        <nav aria-label="Sections">
          {sections.map(([section, label]) => (
            <a key={section} href={href(section)} aria-current={current === section ? "page" : undefined}>
              {label}
            </a>
          ))}
          <a href="/docs">API reference</a>
        </nav>
        <div class="who">
          <ThemeToggle />
          <span title={session.user.email}>{session.user.email}</span>
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
      {helpShown ? <ShortcutsHelp onClose={() => setHelpShown(false)} /> : null}
    </>
  );
}

export function App() {
  const { session, notice } = useSession();
  const route = useRoute();
  const [newAccountKey, setNewAccountKey] = useState<CreatedApiKey>();
  useEffect(() => void (session && checkToken().catch(() => undefined)), [session?.token]);
  if (!session) return <SignIn notice={notice} signingUp={route[0] === "signup"} onSignedUp={setNewAccountKey} />;
  return (
    <Shell session={session} route={route}>
      {newAccountKey ? <ShownOnce title={`Your account's API key "${newAccountKey.name}":`} value={newAccountKey.key} onDismiss={() => setNewAccountKey(undefined)} /> : null}
      <View route={route} />
    </Shell>
  );
}
