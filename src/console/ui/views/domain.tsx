/** One domain: the DNS records to publish (one copy button each), verification per record, delete. */
import { useState } from "preact/hooks";
import { ApiError } from "../api/http";
import { v1 } from "../api/session";
import type { Domain, DomainRecord } from "../api/types";
import { Back, Badge, ConfirmButton, CopyButton, DataTable, ErrorNote, Loaded, PageTitle, Row, Time } from "../components/common";
import { useAction, useResource } from "../lib/resource";
import { href, navigate } from "../lib/router";
import { DomainBadges } from "./domains";

/** A row of the records table: the record, with a copy button for its name and for its value. */
function RecordRow({ record }: { record: DomainRecord }) {
  return (
    <Row>
      <td>{record.type}</td>
      <td>
        <code>{record.name}</code> <CopyButton value={record.name} label="Copy name" />
      </td>
      <td class="record-value">
        <code>{record.priority === undefined ? record.value : `${record.priority} ${record.value}`}</code>{" "}
        <CopyButton value={record.value} label="Copy value" />
      </td>
      <td>{record.purpose}</td>
      <td>
        <Badge value={record.status} />
        {record.reason ? <div class="muted">{record.reason}</div> : null}
      </td>
    </Row>
  );
}

export function DomainView({ domainId }: { domainId: string }) {
  const path = `/domains/${encodeURIComponent(domainId)}`;
  const domain = useResource(() => v1.get<Domain>(path), [domainId]);
  const action = useAction();
  const [inUse, setInUse] = useState(false);
  const verify = () => void action.run(() => v1.post<Domain>(`${path}/verify`)).then(domain.reload);
  const remove = (force: boolean) =>
    void action
      .run(async () => {
        try {
          return await v1.delete(`${path}${force ? "?force=true" : ""}`);
        } catch (error) {
          // 409: inboxes still use the domain; deleting them too is offered, never assumed.
          if (error instanceof ApiError && error.status === 409) setInUse(true);
          throw error;
        }
      })
      .then((deleted) => deleted && navigate("domains"));
  return (
    <>
      <Back to={href("domains")} label="Domains" />
      <Loaded resource={domain} what="domain">
        {(data) => (
          <>
            <PageTitle title={data.name}>
              <button type="button" class="primary" disabled={action.busy} onClick={verify}>
                {action.busy ? "Checking DNS…" : "Verify now"}
              </button>
              <ConfirmButton label="Delete" question={`Delete ${data.name}?`} onConfirm={() => remove(false)} disabled={action.busy} />
              {inUse ? <ConfirmButton label="Delete with its inboxes" question="Delete the domain and every inbox on it?" onConfirm={() => remove(true)} /> : null}
            </PageTitle>
            <DomainBadges domain={data} />
            {data.verifiedAt ? (
              <p class="muted">
                Verified <Time iso={data.verifiedAt} />
              </p>
            ) : null}
            <ErrorNote message={action.error} />
            <p>Publish these records at your DNS provider, then verify. Receiving needs the MX record; sending needs SPF, DKIM and DMARC.</p>
            <DataTable columns={["Type", "Name", "Value", "For", "Status"]} class="records">
              {data.records.map((record) => (
                <RecordRow key={`${record.type} ${record.name}`} record={record} />
              ))}
            </DataTable>
          </>
        )}
      </Loaded>
    </>
  );
}
