/** Allow and block lists: the organization's and its inboxes' entries for received and sent mail; add and remove. */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { AccessRule, Inbox } from "../api/types";
import { Badge, ConfirmButton, DataTable, Empty, ErrorNote, Loaded, PageTitle, Pager, Row, Time } from "../components/common";
import { submittedValues } from "../lib/forms";
import { useAction, useResource } from "../lib/resource";

const per = 20;

export function AccessRules() {
  const [page, setPage] = useState(1);
  const rules = useResource(() => v1.get<AccessRule[]>(`/access-rules?page=${page}&per=${per}`), [page]);
  const inboxes = useResource(() => v1.get<Inbox[]>("/inboxes?per=100"), []);
  const action = useAction();
  const inboxName = (id?: string) => (id ? (inboxes.data?.find((inbox) => inbox.id === id)?.email ?? id) : "All inboxes");
  const add = (event: SubmitEvent) => {
    const form = event.currentTarget as HTMLFormElement;
    const { direction, ruleAction, value, inboxId } = submittedValues(event);
    void action.run(() => v1.post<AccessRule>("/access-rules", { direction, action: ruleAction, value: value?.trim(), inboxId: inboxId || undefined })).then((rule) => {
      if (!rule) return;
      form.reset();
      rules.reload();
    });
  };
  const remove = (rule: AccessRule) => void action.run(() => v1.delete(`/access-rules/${encodeURIComponent(rule.id)}`)).then(rules.reload);
  return (
    <>
      <PageTitle title="Access rules" />
      <p class="muted">
        Addresses and domains (a domain covers its subdomains) to take mail from or send to. A block entry always wins; once a direction has an allow entry, only what an allow
        entry matches gets through.
      </p>
      <form class="card create inline-form" onSubmit={add}>
        <label>
          Direction
          <select name="direction">
            <option value="receive">Receiving</option>
            <option value="send">Sending</option>
          </select>
        </label>
        <label>
          Action
          <select name="ruleAction">
            <option value="block">Block</option>
            <option value="allow">Allow</option>
          </select>
        </label>
        <label>
          Address or domain
          <input name="value" required maxLength={1024} placeholder="example.com" autocomplete="off" />
        </label>
        <label>
          Applies to
          <select name="inboxId">
            <option value="">All inboxes</option>
            {(inboxes.data ?? []).map((inbox) => (
              <option key={inbox.id} value={inbox.id}>
                {inbox.email}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary" disabled={action.busy}>
          Add rule
        </button>
      </form>
      <ErrorNote message={action.error} />
      <Loaded resource={rules} what="access rules">
        {(list) =>
          list.length ? (
            <DataTable columns={["Address or domain", "Direction", "Action", "Applies to", "Added"]} actions caption="Access rules">
              {list.map((rule) => (
                <Row key={rule.id}>
                  <td>{rule.value}</td>
                  <td>{rule.direction === "receive" ? "Receiving" : "Sending"}</td>
                  <td>
                    <Badge value={rule.action} />
                  </td>
                  <td>{inboxName(rule.inboxId)}</td>
                  <td>
                    <Time iso={rule.createdAt} />
                  </td>
                  <td>
                    <ConfirmButton label="Remove" question={`Remove the ${rule.action} entry for ${rule.value}?`} onConfirm={() => remove(rule)} disabled={action.busy} />
                  </td>
                </Row>
              ))}
            </DataTable>
          ) : (
            <Empty>No access rules: every sender and every recipient is accepted.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={rules.data?.length ?? 0} onPage={setPage} />
    </>
  );
}
