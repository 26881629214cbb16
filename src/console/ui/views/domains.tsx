/** Custom domains: add one (its DNS records follow on its page) and the list with their state. */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Domain } from "../api/types";
import { Badge, Empty, ErrorNote, Loaded, PageTitle, Pager } from "../components/common";
import { submittedValues } from "../lib/forms";
import { useAction, useResource } from "../lib/resource";
import { href, navigate } from "../lib/router";

const per = 20;

export function DomainBadges({ domain }: { domain: Domain }) {
  return (
    <span class="badges">
      <Badge value={domain.status} />
      <Badge label="receiving" value={domain.receiving ? "verified" : "pending"} />
      <Badge label="sending" value={domain.sending ? "verified" : "pending"} />
    </span>
  );
}

export function Domains() {
  const [page, setPage] = useState(1);
  const domains = useResource(() => v1.get<Domain[]>(`/domains?page=${page}&per=${per}`), [page]);
  const action = useAction();
  const add = (event: SubmitEvent) => {
    const { name } = submittedValues(event);
    void action.run(() => v1.post<Domain>("/domains", { name: name?.trim() })).then((domain) => domain && navigate("domains", domain.id));
  };
  return (
    <>
      <PageTitle title="Domains" />
      <form class="card create inline-form" onSubmit={add}>
        <label>
          Add a domain
          <input name="name" required placeholder="example.com" autocomplete="off" />
        </label>
        <button type="submit" class="primary" disabled={action.busy}>
          Add domain
        </button>
        <ErrorNote message={action.error} />
      </form>
      <Loaded resource={domains} what="domains">
        {(list) =>
          list.length ? (
            <ul class="list" aria-label="Domains">
              {list.map((domain) => (
                <li key={domain.id} class="item">
                  <a class="main-link" href={href("domains", domain.id)}>
                    <strong>{domain.name}</strong>
                  </a>
                  <DomainBadges domain={domain} />
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No custom domains. Inboxes on the service's own domain need none.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={domains.data?.length ?? 0} onPage={setPage} />
    </>
  );
}
