/** Inboxes: the list with paging, create (random or chosen address), rename and delete. */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Domain, Inbox } from "../api/types";
import { ConfirmButton, Empty, ErrorNote, Loaded, PageTitle, Pager, Time } from "../components/common";
import { useFocusOnMount } from "../lib/focus";
import { plural } from "../lib/format";
import { submittedValues } from "../lib/forms";
import { useAction, useResource } from "../lib/resource";
import { href } from "../lib/router";

const per = 20;
/** How often the counts are read while the event stream is down. */
const countsPollMs = 5000;
const domainOf = (email: string) => email.slice(email.lastIndexOf("@") + 1);

/**
 * Where a chosen address may live: the organization's domains verified for receiving, and the
 * service's own mail domain, which the API does not name: it is the domain of inboxes that are on
 * no custom domain (every account starts with one).
 */
function mailDomains(inboxes: Inbox[], domains: Domain[]): string[] {
  const custom = new Set(domains.map((domain) => domain.name));
  const service = inboxes.map((inbox) => domainOf(inbox.email)).filter((name) => !custom.has(name));
  return [...new Set([...service, ...domains.filter((domain) => domain.receiving).map((domain) => domain.name)])];
}

function CreateInbox({ domains, onCreated }: { domains: string[]; onCreated(): void }) {
  const [chosen, setChosen] = useState(false);
  const action = useAction();
  const create = (event: SubmitEvent) => {
    const form = event.currentTarget as HTMLFormElement;
    const values = submittedValues(event);
    const body = { name: values.name?.trim() || undefined, email: chosen ? `${values.local?.trim()}@${values.domain}` : undefined };
    void action.run(() => v1.post<Inbox>("/inboxes", body)).then((inbox) => {
      if (!inbox) return;
      form.reset();
      setChosen(false);
      onCreated();
    });
  };
  return (
    <form class="card create" onSubmit={create} aria-labelledby="new-inbox">
      <h2 id="new-inbox">New inbox</h2>
      <div class="row">
        <label>
          <span>
            Name <span class="muted">(optional)</span>
          </span>
          <input name="name" maxLength={256} />
        </label>
        <fieldset>
          <legend>Address</legend>
          <label class="inline">
            <input type="radio" name="mode" checked={!chosen} onChange={() => setChosen(false)} /> Random
          </label>
          <label class="inline">
            <input type="radio" name="mode" checked={chosen} onChange={() => setChosen(true)} /> Choose
          </label>
        </fieldset>
      </div>
      {chosen ? (
        <div class="row address">
          <label>
            Local part
            <input name="local" required pattern="[^@\s]+" autocomplete="off" placeholder="support" />
          </label>
          <span aria-hidden="true">@</span>
          <label>
            Domain
            <select name="domain" required>
              {domains.map((domain) => (
                <option key={domain} value={domain}>
                  {domain}
                </option>
              ))}
            </select>
          </label>
        </div>
      ) : null}
      <ErrorNote message={action.error} />
      <button type="submit" class="primary" disabled={action.busy}>
        Create inbox
      </button>
    </form>
  );
}

function RenameForm({ inbox, onDone }: { inbox: Inbox; onDone(renamed: boolean): void }) {
  const action = useAction();
  const field = useFocusOnMount<HTMLInputElement>();
  const rename = (event: SubmitEvent) => {
    const { name } = submittedValues(event);
    void action.run(() => v1.patch<Inbox>(`/inboxes/${encodeURIComponent(inbox.id)}`, { name: name?.trim() || null })).then((renamed) => renamed && onDone(true));
  };
  return (
    <form class="inline-form" onSubmit={rename}>
      <label>
        New name for {inbox.email}
        <input name="name" defaultValue={inbox.name ?? ""} maxLength={256} ref={field} />
      </label>
      <button type="submit" class="primary" disabled={action.busy}>
        Save
      </button>
      <button type="button" onClick={() => onDone(false)}>
        Cancel
      </button>
      <ErrorNote message={action.error} />
    </form>
  );
}

function InboxRow({ inbox, onChanged }: { inbox: Inbox; onChanged(): void }) {
  const [renaming, setRenaming] = useState(false);
  const action = useAction();
  const remove = () => void action.run(() => v1.delete(`/inboxes/${encodeURIComponent(inbox.id)}`)).then((deleted) => deleted && onChanged());
  return (
    <li class="item">
      {renaming ? (
        <RenameForm
          inbox={inbox}
          onDone={(renamed) => {
            setRenaming(false);
            if (renamed) onChanged();
          }}
        />
      ) : (
        <>
          <a class={`main-link${inbox.unreadCount ? " unread" : ""}`} href={href("inboxes", inbox.id)} data-mail-item data-inbox-id={inbox.id}>
            <strong>{inbox.name || inbox.email}</strong>
            {inbox.name ? <span class="muted"> {inbox.email}</span> : null}
            {inbox.unreadCount ? <span class="unread-count"> {inbox.unreadCount} unread</span> : null}
          </a>
          <span class="muted">
            {plural(inbox.messageCount ?? 0, "message")} · created <Time iso={inbox.createdAt} />
          </span>
          <span class="actions">
            <button type="button" onClick={() => setRenaming(true)}>
              Rename
            </button>
            <ConfirmButton label="Delete" question={`Delete ${inbox.email} and all its mail?`} onConfirm={remove} disabled={action.busy} />
          </span>
        </>
      )}
      <ErrorNote message={action.error} />
    </li>
  );
}

export function Inboxes() {
  const [page, setPage] = useState(1);
  // Live: each inbox's message and unread counts follow its mail.
  const inboxes = useResource(() => v1.get<Inbox[]>(`/inboxes?page=${page}&per=${per}`), [page], { pollMs: countsPollMs, liveWhen: (event) => event.event.startsWith("message.") });
  const domains = useResource(() => v1.get<Domain[]>("/domains?per=100"), []);
  return (
    <>
      <PageTitle title="Inboxes" />
      <CreateInbox domains={mailDomains(inboxes.data ?? [], domains.data ?? [])} onCreated={inboxes.reload} />
      <Loaded resource={inboxes} what="inboxes">
        {(list) =>
          list.length ? (
            <ul class="list" aria-label="Inboxes">
              {list.map((inbox) => (
                <InboxRow key={inbox.id} inbox={inbox} onChanged={inboxes.reload} />
              ))}
            </ul>
          ) : (
            <Empty>No inboxes on this page.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={inboxes.data?.length ?? 0} onPage={setPage} />
    </>
  );
}
