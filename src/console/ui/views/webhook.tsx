/** One webhook: test, enable, delete, and its attempts log (live) with a re-drive per attempt. */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Webhook, WebhookAttempt } from "../api/types";
import { Back, Badge, ConfirmButton, DataTable, Empty, ErrorNote, Loaded, PageTitle, Pager, Row, Time } from "../components/common";
import { useAction, useResource } from "../lib/resource";
import { href, navigate } from "../lib/router";
import { webhookState } from "./webhooks";

const per = 25;
const attemptsPollMs = 2000;
const excerptLength = 120;

function AttemptRow({ attempt, onRedrive, busy }: { attempt: WebhookAttempt; onRedrive(): void; busy: boolean }) {
  const response = attempt.response ?? attempt.error ?? "";
  return (
    <Row>
      <td>
        <Time iso={attempt.createdAt} />
      </td>
      <td>{attempt.event}</td>
      <td>{attempt.attemptNumber}</td>
      <td>
        <Badge value={attempt.success ? "success" : "failed"} label={attempt.statusCode ? String(attempt.statusCode) : undefined} />
      </td>
      <td class="response">
        {response.length > excerptLength ? (
          <details>
            <summary>{response.slice(0, excerptLength)}…</summary>
            <pre>{response}</pre>
          </details>
        ) : (
          response || "—"
        )}
      </td>
      <td>
        <button type="button" class="small" disabled={busy} onClick={onRedrive}>
          Re-drive
        </button>
      </td>
    </Row>
  );
}

function Attempts({ webhookId }: { webhookId: string }) {
  const [page, setPage] = useState(1);
  const path = `/webhooks/${encodeURIComponent(webhookId)}/attempts`;
  const attempts = useResource(() => v1.get<WebhookAttempt[]>(`${path}?page=${page}&per=${per}`), [webhookId, page], { pollMs: attemptsPollMs });
  const action = useAction();
  const redrive = (attempt: WebhookAttempt) => void action.run(() => v1.post(`${path}/${encodeURIComponent(attempt.id)}/retry`)).then(attempts.reload);
  return (
    <section aria-labelledby="attempts">
      <h2 id="attempts">Attempts</h2>
      <ErrorNote message={action.error} />
      <Loaded resource={attempts} what="attempts">
        {(list) =>
          list.length ? (
            <DataTable columns={["Time", "Event", "Try", "Result", "Response"]} actions>
              {list.map((attempt) => (
                <AttemptRow key={attempt.id} attempt={attempt} busy={action.busy} onRedrive={() => redrive(attempt)} />
              ))}
            </DataTable>
          ) : (
            <Empty>No attempts yet. Send a test event to see one.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={attempts.data?.length ?? 0} onPage={setPage} />
    </section>
  );
}

export function WebhookView({ webhookId }: { webhookId: string }) {
  const path = `/webhooks/${encodeURIComponent(webhookId)}`;
  const webhook = useResource(() => v1.get<Webhook>(path), [webhookId]);
  const action = useAction();
  const [tested, setTested] = useState(false);
  const test = () => void action.run(() => v1.post(`${path}/test`)).then((result) => setTested(Boolean(result)));
  const enable = () => void action.run(() => v1.patch(path, { enabled: true })).then(webhook.reload);
  const remove = () => void action.run(() => v1.delete(path)).then((deleted) => deleted && navigate("webhooks"));
  return (
    <>
      <Back to={href("webhooks")} label="Webhooks" />
      <Loaded resource={webhook} what="webhook">
        {(data) => (
          <>
            <PageTitle title={data.url}>
              <button type="button" disabled={action.busy} onClick={test}>
                Send test event
              </button>
              {data.enabled === false ? (
                <button type="button" disabled={action.busy} onClick={enable}>
                  Enable
                </button>
              ) : null}
              <ConfirmButton label="Delete" question="Delete this webhook and its attempts?" onConfirm={remove} disabled={action.busy} />
            </PageTitle>
            <p>
              <Badge value={webhookState(data)} /> {data.disabledReason ? <span class="muted">{data.disabledReason}</span> : null}
            </p>
            <p class="muted">Events: {data.events.join(", ")}</p>
            {tested ? (
              <p class="notice" role="status">
                Test event queued: its attempt appears below.
              </p>
            ) : null}
            <ErrorNote message={action.error} />
          </>
        )}
      </Loaded>
      <Attempts webhookId={webhookId} />
    </>
  );
}
