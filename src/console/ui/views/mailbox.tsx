/** One inbox's mail: its threads (newest activity first) or its messages with search, kept live by polling. */
import { useState } from "preact/hooks";
import { v1 } from "../api/session";
import type { Inbox, MessageSummary, Thread } from "../api/types";
import { Back, Badge, Empty, ErrorNote, Loaded, PageTitle, Pager, Time } from "../components/common";
import { plural } from "../lib/format";
import { submittedValues } from "../lib/forms";
import { useResource } from "../lib/resource";
import { href } from "../lib/router";

const per = 25;
/** How often the lists look for new mail. */
const mailPollMs = 2000;

const inboxPath = (inboxId: string) => `/inboxes/${encodeURIComponent(inboxId)}`;

export function useInbox(inboxId: string) {
  return useResource(() => v1.get<Inbox>(inboxPath(inboxId)), [inboxId]);
}

function Threads({ inboxId }: { inboxId: string }) {
  const [page, setPage] = useState(1);
  const threads = useResource(() => v1.get<Thread[]>(`${inboxPath(inboxId)}/threads?page=${page}&per=${per}`), [inboxId, page], { pollMs: mailPollMs });
  return (
    <>
      <Loaded resource={threads} what="threads">
        {(list) =>
          list.length ? (
            <ul class="list mail" aria-label="Threads">
              {list.map((thread) => (
                <li key={thread.id} class="item">
                  <a class="main-link" href={href("inboxes", inboxId, "threads", thread.id)}>
                    <strong>{thread.subject || "(no subject)"}</strong>
                  </a>
                  <span class="muted">{plural(thread.messageCount, "message")}</span>
                  <Time iso={thread.lastMessageAt} />
                </li>
              ))}
            </ul>
          ) : (
            <Empty>No mail yet. New messages appear here by themselves.</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={threads.data?.length ?? 0} onPage={setPage} />
    </>
  );
}

function Messages({ inboxId }: { inboxId: string }) {
  const [page, setPage] = useState(1);
  const [query, setQuery] = useState("");
  const search = query ? `&query=${encodeURIComponent(query)}` : "";
  const messages = useResource(() => v1.get<MessageSummary[]>(`${inboxPath(inboxId)}/messages?page=${page}&per=${per}${search}`), [inboxId, page, query], {
    pollMs: mailPollMs,
  });
  const submit = (event: SubmitEvent) => {
    setQuery(submittedValues(event).query?.trim() ?? "");
    setPage(1);
  };
  return (
    <>
      <form class="search" role="search" onSubmit={submit}>
        <label for="mail-search">Search subject, text and sender</label>
        <div class="row">
          <input id="mail-search" name="query" type="search" defaultValue={query} placeholder="a word or phrase, or /regex/i" />
          <button type="submit">Search</button>
        </div>
      </form>
      <Loaded resource={messages} what="messages">
        {(list) =>
          list.length ? (
            <ul class="list mail" aria-label={query ? `Messages matching ${query}` : "Messages"}>
              {list.map((message) => (
                <li key={message.id} class="item">
                  <a class="main-link" href={href("inboxes", inboxId, "messages", message.id)}>
                    <strong>{message.subject || "(no subject)"}</strong>
                    <span class="muted"> {message.status === "received" ? message.from : `to ${message.to.join(", ")}`}</span>
                  </a>
                  <span class="snippet">{message.text?.slice(0, 140)}</span>
                  <Badge value={message.status} />
                  <Time iso={message.createdAt} />
                </li>
              ))}
            </ul>
          ) : (
            <Empty>{query ? "No message matches." : "No mail yet. New messages appear here by themselves."}</Empty>
          )
        }
      </Loaded>
      <Pager page={page} per={per} count={messages.data?.length ?? 0} onPage={setPage} />
    </>
  );
}

export function Mailbox({ inboxId, tab }: { inboxId: string; tab: "threads" | "messages" }) {
  const inbox = useInbox(inboxId);
  return (
    <>
      <Back to={href("inboxes")} label="All inboxes" />
      <PageTitle title={inbox.data?.name || inbox.data?.email || "Inbox"}>
        <a class="button primary" href={href("inboxes", inboxId, "compose")}>
          Compose
        </a>
      </PageTitle>
      {inbox.data?.name ? <p class="muted">{inbox.data.email}</p> : null}
      <nav class="tabs" aria-label="Mail views">
        <a href={href("inboxes", inboxId)} aria-current={tab === "threads" ? "page" : undefined}>
          Threads
        </a>
        <a href={href("inboxes", inboxId, "messages")} aria-current={tab === "messages" ? "page" : undefined}>
          Messages
        </a>
      </nav>
      {inbox.error ? <ErrorNote message={inbox.error} /> : tab === "threads" ? <Threads inboxId={inboxId} /> : <Messages inboxId={inboxId} />}
    </>
  );
}
