/** The console: the sign-in page without a session, else the navigation and the view of the route. */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { checkToken, signOut, useSession, type Session } from "./api/session";
import type { CreatedApiKey } from "./api/types";
import { ShownOnce } from "./components/common";
import { href, useRoute } from "./lib/router";
import { ApiKeys } from "./views/api-keys";
import { Compose } from "./views/compose";
import { DomainView } from "./views/domain";
import { Domains } from "./views/domains";
import { Inboxes } from "./views/inboxes";
import { Mailbox } from "./views/mailbox";
import { MessagePage } from "./views/message";
import { Outbound } from "./views/outbound";
import { ThreadView } from "./views/thread";
import { WebhookView } from "./views/webhook";
import { Webhooks } from "./views/webhooks";
import { SignIn } from "./views/sign-in";

const sections = [
  ["inboxes", "Inboxes"],
  ["outbound", "Outbound"],
  ["webhooks", "Webhooks"],
  ["domains", "Domains"],
  ["keys", "API keys"],
] as const;

/** The access token is checked once a minute, so an expired one ends the session even while the API key works. */
const tokenCheckMs = 60_000;

function View({ route }: { route: string[] }) {
  const [section, id, sub, subId] = route;
  if (section === "inboxes" && id) {
    if (sub === "threads" && subId) return <ThreadView inboxId={id} threadId={subId} />;
    if (sub === "messages" && subId) return <MessagePage inboxId={id} messageId={subId} />;
    if (sub === "compose") return <Compose inboxId={id} />;
    return <Mailbox inboxId={id} tab={sub === "messages" ? "messages" : "threads"} />;
  }
  if (section === "outbound") return <Outbound />;
  if (section === "webhooks") return id ? <WebhookView webhookId={id} /> : <Webhooks />;
  if (section === "domains") return id ? <DomainView domainId={id} /> : <Domains />;
  if (section === "keys") return <ApiKeys />;
  return <Inboxes />;
}

function Shell({ session, route, children }: { session: Session; route: string[]; children: ComponentChildren }) {
  const main = useRef<HTMLElement>(null);
  const path = route.join("/");
  // A new view takes the focus, so keyboard and screen-reader users start at its content.
  useEffect(() => main.current?.focus({ preventScroll: true }), [path]);
  useEffect(() => {
    const timer = setInterval(() => void checkToken().catch(() => undefined), tokenCheckMs);
    return () => clearInterval(timer);
  }, []);
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
          <span title={session.user.email}>{session.user.email}</span>
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
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
