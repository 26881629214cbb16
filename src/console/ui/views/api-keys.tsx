/** API keys of the organization (with the access token): create (shown once), list, revoke. */
import { useState } from "preact/hooks";
import { account, useSession } from "../api/session";
import type { ApiKey, CreatedApiKey } from "../api/types";
import { Badge, ConfirmButton, DataTable, Empty, ErrorNote, Loaded, PageTitle, Pager, Row, ShownOnce, Time } from "../components/common";
import { submittedValues } from "../lib/forms";
import { useAction, useResource } from "../lib/resource";

const per = 20;

export function ApiKeys() {
  const { session } = useSession();
  const [page, setPage] = useState(1);
  const keys = useResource(() => account.get<ApiKey[]>(`/api_keys?page=${page}&per=${per}`), [page]);
  const [created, setCreated] = useState<CreatedApiKey>();
  const action = useAction();
  const create = (event: SubmitEvent) => {
    const form = event.currentTarget as HTMLFormElement;
    const { name } = submittedValues(event);
    void action.run(() => account.post<CreatedApiKey>("/api_keys", { name: name?.trim() })).then((key) => {
      if (!key) return;
      form.reset();
      setCreated(key);
      keys.reload();
    });
  };
  const revoke = (key: ApiKey) => void action.run(() => account.delete(`/api_keys/${encodeURIComponent(key.id)}`)).then(keys.reload);
  return (
    <>
      <PageTitle title="API keys" />
      {created ? <ShownOnce title={`API key "${created.name}":`} value={created.key} onDismiss={() => setCreated(undefined)} /> : null}
      <form class="card create inline-form" onSubmit={create}>
        <label>
          New key name
          <input name="name" required maxLength={100} placeholder="production server" autocomplete="off" />
        </label>
        <button type="submit" class="primary" disabled={action.busy}>
          Create key
        </button>
      </form>
      <ErrorNote message={action.error} />
      <Loaded resource={keys} what="API keys">
        {(list) =>
          list.length ? (
            <DataTable columns={["Name", "Prefix", "Created", "Last used"]} actions>
              {list.map((key) => (
                <Row key={key.id}>
                  <td>
                    {key.name} {key.id === session?.apiKeyId ? <Badge value="this console" /> : null}
                  </td>
                  <td>
                    <code>{key.prefix}…</code>
                  </td>
                  <td>
                    <Time iso={key.createdAt} />
                  </td>
                  <td>{key.lastUsedAt ? <Time iso={key.lastUsedAt} /> : <span class="muted">never</span>}</td>
                  <td>
                    <ConfirmButton label="Revoke" question={`Revoke "${key.name}" now?`} onConfirm={() => revoke(key)} disabled={action.busy} />
                  </td>
                </Row>
              ))}
            </DataTable>
          ) : (
            <Empty>No API keys.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={keys.data?.length ?? 0} onPage={setPage} />
    </>
  );
}
