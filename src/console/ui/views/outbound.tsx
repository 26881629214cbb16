/**
 * The outbound queue: every inbox's deliveries to remote recipients in one list, newest first,
 * narrowed by status, recipient domain or sending inbox; and the organization's suppression list.
 */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Inbox, OutboundDelivery, Suppression } from "../api/types";
import { Badge, ConfirmButton, DataTable, Empty, ErrorNote, Loaded, PageTitle, Pager, Row, Time } from "../components/common";
import { nameAndAddress } from "../lib/format";
import { formValues } from "../lib/forms";
import { useAction, useResource } from "../lib/resource";
import { href } from "../lib/router";

const outboundPollMs = 5000;
const per = 20;
const statuses = ["queued", "delivered", "bounced", "rejected"];

interface Filter {
  status?: string;
  domain?: string;
  inboxId?: string;
}

const queryOf = (filter: Filter, page: number) => {
  const query = new URLSearchParams({ page: String(page), per: String(per) });
  for (const [name, value] of Object.entries(filter)) if (value) query.set(name, value);
  return query.toString();
};

function Filters({ inboxes, filter, onFilter }: { inboxes: Inbox[]; filter: Filter; onFilter(filter: Filter): void }) {
  const apply = (event: Event) => {
    event.preventDefault();
    // On submit the form itself, on a choice in a list the list: either way the whole form's values.
    const values = formValues((event.currentTarget as HTMLElement).closest("form")!);
    onFilter({ status: values.status || undefined, domain: values.domain?.trim() || undefined, inboxId: values.inboxId || undefined });
  };
  return (
    <form class="row filters" role="search" aria-label="Filter deliveries" onSubmit={apply}>
      {/* Labels beside their lists, not around them: a list's name is then the label alone, not its chosen option too. */}
      <div class="field">
        <label for="filter-status">Status</label>
        <select id="filter-status" name="status" defaultValue={filter.status ?? ""} onChange={apply}>
          <option value="">Any status</option>
          {statuses.map((status) => (
            <option key={status} value={status}>
              {status}
            </option>
          ))}
        </select>
      </div>
      <label>
        Recipient domain
        <input name="domain" defaultValue={filter.domain ?? ""} placeholder="example.com" autocomplete="off" />
      </label>
      <div class="field">
        <label for="filter-inbox">Inbox</label>
        <select id="filter-inbox" name="inboxId" defaultValue={filter.inboxId ?? ""} onChange={apply}>
          <option value="">Every inbox</option>
          {inboxes.map((inbox) => (
            <option key={inbox.id} value={inbox.id}>
              {nameAndAddress(inbox.email, inbox.name)}
            </option>
          ))}
        </select>
      </div>
      <button type="submit">Filter</button>
    </form>
  );
}

function Deliveries() {
  const inboxes = useResource(() => v1.get<Inbox[]>("/inboxes?per=100"), []);
  const [filter, setFilter] = useState<Filter>({});
  const [page, setPage] = useState(1);
  const query = queryOf(filter, page);
  const deliveries = useResource(() => v1.get<OutboundDelivery[]>(`/deliveries?${query}`), [query], {
    pollMs: outboundPollMs,
    liveWhen: (event) => event.event.startsWith("message.") && event.event !== "message.received",
  });
  return (
    <section aria-labelledby="deliveries">
      <h2 id="deliveries">Deliveries</h2>
      <Filters
        inboxes={inboxes.data ?? []}
        filter={filter}
        onFilter={(next) => {
          setFilter(next);
          setPage(1);
        }}
      />
      <Loaded resource={deliveries} what="deliveries">
        {(list) =>
          list.length ? (
            <DataTable columns={["Message", "From", "Recipient", "Status", "Tries", "Last response", "Updated"]} caption="Delivery to each remote recipient">
              {list.map((delivery) => (
                <Row key={delivery.id}>
                  <td>
                    <a href={href("inboxes", delivery.inboxId, "threads", delivery.threadId)}>{delivery.subject || "(no subject)"}</a>
                  </td>
                  <td>{nameAndAddress(delivery.from, delivery.fromName)}</td>
                  <td>{delivery.recipient}</td>
                  <td>
                    <Badge value={delivery.status} />
                  </td>
                  <td>{delivery.attempts}</td>
                  <td class="response">
                    {delivery.lastResponse ?? "—"}
                  </td>
                  <td>
                    <Time iso={delivery.updatedAt} />
                  </td>
                </Row>
              ))}
            </DataTable>
          ) : (
            <Empty>{Object.values(filter).some(Boolean) ? "No delivery matches." : "Nothing sent to a remote recipient yet."}</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={deliveries.data?.length ?? 0} onPage={setPage} />
    </section>
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
                <Row key={suppression.id}>
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
                </Row>
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
  return (
    <>
      <PageTitle title="Outbound" />
      <Deliveries />
      <Suppressions />
    </>
  );
}
