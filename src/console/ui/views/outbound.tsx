/**
 * The outbound queue: an inbox's sent messages with their delivery to each recipient, and the
 * organization's suppression list. The API has no organization-wide delivery list, so this reads
 * one inbox's recent messages and fetches the sent ones in full (their `deliveries`).
 */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Inbox, Message, MessageSummary, Suppression } from "../api/types";
import { Badge, ConfirmButton, DataTable, Empty, ErrorNote, Loaded, PageTitle, Pager, Time } from "../components/common";
import { DeliveryTable } from "../components/message-view";
import { useAction, useResource } from "../lib/resource";
import { href } from "../lib/router";

const recentMessages = 20;
const outboundPollMs = 5000;
const per = 20;

async function sentMessages(inboxId: string): Promise<Message[]> {
  const path = `/inboxes/${encodeURIComponent(inboxId)}/messages`;
  const summaries = await v1.get<MessageSummary[]>(`${path}?per=${recentMessages}`);
  const sent = summaries.filter((summary) => summary.status !== "received");
  return Promise.all(sent.map((summary) => v1.get<Message>(`${path}/${encodeURIComponent(summary.id)}`)));
}

function SentMessages({ inboxId }: { inboxId: string }) {
  const messages = useResource(() => sentMessages(inboxId), [inboxId], { pollMs: outboundPollMs });
  return (
    <Loaded resource={messages} what="sent messages">
      {(list) =>
        list.length ? (
          <ul class="list outbound" aria-label="Sent messages">
            {list.map((message) => (
              <li key={message.id} class="card">
                <p class="message-head">
                  <a href={href("inboxes", inboxId, "messages", message.id)}>
                    <strong>{message.subject || "(no subject)"}</strong>
                  </a>
                  <Badge value={message.status} />
                  <Time iso={message.createdAt} />
                </p>
                {message.deliveries.length ? <DeliveryTable deliveries={message.deliveries} /> : <p class="muted">Delivered on this server to {message.to.join(", ")}: no outbound delivery.</p>}
              </li>
            ))}
          </ul>
        ) : (
          <Empty>This inbox has sent nothing lately.</Empty>
        )
      }
    </Loaded>
  );
}

function Suppressions() {
  const [page, setPage] = useState(1);
  const suppressions = useResource(() => v1.get<Suppression[]>(`/suppressions?page=${page}&per=${per}`), [page]);
  const action = useAction();
  const remove = (suppression: Suppression) => void action.run(() => v1.delete(`/suppressions/${encodeURIComponent(suppression.id)}`)).then(suppressions.reload);
  return (
    <section aria-labelledby="suppressions">
      <h2 id="suppressions">Suppressed addresses</h2>
      <p class="muted">Mail to these addresses is rejected without trying, after a hard bounce or a complaint. Remove one to send to it again.</p>
      <ErrorNote message={action.error} />
      <Loaded resource={suppressions} what="suppressions">
        {(list) =>
          list.length ? (
            <DataTable columns={["Address", "Reason", "Since"]} actions>
              {list.map((suppression) => (
                <tr key={suppression.id}>
                  <td>{suppression.address}</td>
                  <td>
                    {suppression.reason}
                    {suppression.detail ? <span class="muted"> — {suppression.detail}</span> : null}
                  </td>
                  <td>
                    <Time iso={suppression.createdAt} />
                  </td>
                  <td>
                    <ConfirmButton label="Remove" question={`Send to ${suppression.address} again?`} onConfirm={() => remove(suppression)} disabled={action.busy} />
                  </td>
                </tr>
              ))}
            </DataTable>
          ) : (
            <Empty>No address is suppressed.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={suppressions.data?.length ?? 0} onPage={setPage} />
    </section>
  );
}

export function Outbound() {
  const inboxes = useResource(() => v1.get<Inbox[]>("/inboxes?per=100"), []);
  const [chosen, setChosen] = useState<string>();
  const inboxId = chosen ?? inboxes.data?.[0]?.id;
  return (
    <>
      <PageTitle title="Outbound" />
      <Loaded resource={inboxes} what="inboxes">
        {(list) =>
          list.length ? (
            <label class="inline-form">
              Sent from
              <select value={inboxId} onChange={(event) => setChosen((event.currentTarget as HTMLSelectElement).value)}>
                {list.map((inbox) => (
                  <option key={inbox.id} value={inbox.id}>
                    {inbox.name ? `${inbox.name} <${inbox.email}>` : inbox.email}
                  </option>
                ))}
              </select>
            </label>
          ) : (
            <Empty>No inboxes yet.</Empty>
          )
        }
      </Loaded>
      {inboxId ? <SentMessages inboxId={inboxId} /> : null}
      <Suppressions />
    </>
  );
}
