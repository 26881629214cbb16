/** Webhooks: the list, and creating one (events as checkboxes; the signing secret shown once). */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import { eventNames, type CreatedWebhook, type Webhook } from "../api/types";
import { Badge, Empty, ErrorNote, Loaded, PageTitle, Pager, ShownOnce } from "../components/common";
import { checkedValues, submittedValues } from "../lib/forms";
import { useAction, useResource } from "../lib/resource";
import { href } from "../lib/router";

const per = 20;

function CreateWebhook({ onCreated }: { onCreated(webhook: CreatedWebhook): void }) {
  const action = useAction();
  const create = (event: SubmitEvent) => {
    const form = event.currentTarget as HTMLFormElement;
    const { url } = submittedValues(event);
    const events = checkedValues(form, "events");
    void action.run(() => v1.post<CreatedWebhook>("/webhooks", { url: url?.trim(), events })).then((webhook) => {
      if (!webhook) return;
      form.reset();
      onCreated(webhook);
    });
  };
  return (
    <form class="card create" onSubmit={create} aria-labelledby="new-webhook">
      <h2 id="new-webhook">New webhook</h2>
      <label>
        Endpoint URL
        <input name="url" type="url" required placeholder="https://example.com/inboxd-events" />
      </label>
      <fieldset class="checkboxes">
        <legend>Events</legend>
        {eventNames.map((name) => (
          <label key={name} class="inline">
            <input type="checkbox" name="events" value={name} defaultChecked={name.startsWith("message.")} /> {name}
          </label>
        ))}
      </fieldset>
      <ErrorNote message={action.error} />
      <button type="submit" class="primary" disabled={action.busy}>
        Create webhook
      </button>
    </form>
  );
}

export const webhookState = (webhook: Webhook) => (webhook.enabled === false ? "disabled" : "enabled");

export function Webhooks() {
  const [page, setPage] = useState(1);
  const webhooks = useResource(() => v1.get<Webhook[]>(`/webhooks?page=${page}&per=${per}`), [page]);
  const [created, setCreated] = useState<CreatedWebhook>();
  return (
    <>
      <PageTitle title="Webhooks" />
      {created ? <ShownOnce title={`Signing secret of ${created.url}:`} value={created.secret} onDismiss={() => setCreated(undefined)} /> : null}
      <CreateWebhook
        onCreated={(webhook) => {
          setCreated(webhook);
          webhooks.reload();
        }}
      />
      <Loaded resource={webhooks} what="webhooks">
        {(list) =>
          list.length ? (
            <ul class="list" aria-label="Webhooks">
              {list.map((webhook) => (
                <li key={webhook.id} class="item">
                  <a class="main-link" href={href("webhooks", webhook.id)}>
                    <strong>{webhook.url}</strong>
                  </a>
                  <span class="muted">{webhook.events.join(", ")}</span>
                  <Badge value={webhookState(webhook)} />
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No webhooks yet.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={webhooks.data?.length ?? 0} onPage={setPage} />
    </>
  );
}
