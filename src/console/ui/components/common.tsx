/** Small pieces every view uses: states, badges, times, paging, copying and confirmations. */
import { cloneElement, createContext, toChildArray, type ComponentChildren } from "preact";
import { useContext, useState } from "preact/hooks";
import { copyText } from "../lib/clipboard";
import { useFocusOnMount } from "../lib/focus";
import { formatFullTime, formatTime } from "../lib/format";
import { messageOf } from "../api/http";
import type { Resource } from "../lib/resource";

export function ErrorNote({ message }: { message?: string }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/**
 * A resource's three states around its content: loading the first time, an error (kept beside
 * data already shown when a later poll fails), and the data.
 */
export function Loaded<T>({ resource, what, children }: { resource: Resource<T>; what: string; children: (data: T) => ComponentChildren }) {
  if (resource.data === undefined) return resource.error ? <ErrorNote message={resource.error} /> : <Loading what={what} />;
  return (
    <>
      <ErrorNote message={resource.error} />
      {children(resource.data)}
    </>
  );
}

const tones: Record<string, string> = {
  pass: "good",
  verified: "good",
  delivered: "good",
  received: "info",
  sent: "info",
  success: "good",
  enabled: "good",
  fail: "bad",
  failed: "bad",
  bounced: "bad",
  rejected: "bad",
  complained: "bad",
  permerror: "bad",
  disabled: "bad",
  pending: "warn",
  queued: "warn",
  deferred: "warn",
  retrying: "warn",
  temperror: "warn",
  softfail: "warn",
};

export function Badge({ value, label }: { value: string; label?: string }) {
  return <span class={`badge ${tones[value.toLowerCase()] ?? "neutral"}`}>{label ? `${label} ${value}` : value}</span>;
}

export function Time({ iso }: { iso?: string }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} title={formatFullTime(iso)}>
      {formatTime(iso)}
    </time>
  );
}

/** Lists are plain arrays without a total: a full page means there may be another. */
export function Pager({ page, per, count, onPage }: { page: number; per: number; count: number; onPage(page: number): void }) {
  if (page === 1 && count < per) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page === 1} onClick={() => onPage(page - 1)}>
        ← Newer
      </button>
      <span>Page {page}</span>
      <button type="button" disabled={count < per} onClick={() => onPage(page + 1)}>
        Older →
      </button>
    </nav>
  );
}

export function CopyButton({ value, label = "Copy" }: { value: string; label?: string }) {
  const [state, setState] = useState<string>();
  const copy = () =>
    copyText(value).then(
      () => setState("Copied"),
      (error) => setState(messageOf(error)),
    );
  return (
    <button type="button" class="small" onClick={copy} onBlur={() => setState(undefined)} aria-live="polite">
      {state ?? label}
    </button>
  );
}

/** A secret the API shows once (key, webhook secret): said plainly, with a copy button. */
export function ShownOnce({ title, value, onDismiss }: { title: string; value: string; onDismiss(): void }) {
  return (
    <div class="notice" role="status">
      <p>
        <strong>{title}</strong> It is shown this once: copy it now.
      </p>
      <p class="secret">
        <code>{value}</code> <CopyButton value={value} />
      </p>
      <button type="button" class="small" onClick={onDismiss}>
        Done
      </button>
    </div>
  );
}

function Question({ label, question, onYes, onCancel }: { label: string; question: string; onYes(): void; onCancel(): void }) {
  const yes = useFocusOnMount<HTMLButtonElement>();
  return (
    <span class="confirm" role="group" aria-label={question}>
      <span>{question}</span>
      <button type="button" class="danger" ref={yes} onClick={onYes}>
        Yes, {label.toLowerCase()}
      </button>
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </span>
  );
}

/** A destructive button that asks first, in place (no browser dialog), so it is keyboard-friendly. */
export function ConfirmButton({ label, question, onConfirm, disabled }: { label: string; question: string; onConfirm(): void; disabled?: boolean }) {
  const [asking, setAsking] = useState(false);
  if (asking)
    return (
      <Question
        label={label}
        question={question}
        onYes={() => {
          setAsking(false);
          onConfirm();
        }}
        onCancel={() => setAsking(false)}
      />
    );
  return (
    <button type="button" class="danger" disabled={disabled} onClick={() => setAsking(true)}>
      {label}
    </button>
  );
}

export function PageTitle({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <header class="page-title">
      <h1>{title}</h1>
      {children ? <div class="actions">{children}</div> : null}
    </header>
  );
}

export function Back({ to, label }: { to: string; label: string }) {
  return (
    <a class="back" href={to}>
      ← {label}
    </a>
  );
}

/** The column names of the enclosing DataTable, for the cells of its rows. */
const ColumnNames = createContext<string[]>([]);

/**
 * A table that becomes a stack of cards on a phone (style.css, `.table-wrap`): a header cell per
 * column (a column given as false is left out), and with `actions` a last column for the rows'
 * buttons, named for screen readers only. The rows are the children, each a Row. The roles are
 * those the elements have anyway, written out because a browser may drop a table's semantics
 * when CSS displays its parts as blocks.
 */
export function DataTable(props: { columns: (string | false)[]; actions?: boolean; caption?: string; class?: string; children: ComponentChildren }) {
  const columns = props.columns.filter((column) => column !== false);
  return (
    <div class="table-wrap">
      <table class={props.class} role="table">
        {props.caption ? <caption>{props.caption}</caption> : null}
        <thead role="rowgroup">
          <tr role="row">
            {columns.map((column) => (
              <th scope="col" role="columnheader" key={column}>
                {column}
              </th>
            ))}
            {props.actions ? (
              <th scope="col" role="columnheader">
                <span class="offscreen">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody role="rowgroup">
          <ColumnNames.Provider value={columns}>{props.children}</ColumnNames.Provider>
        </tbody>
      </table>
    </div>
  );
}

/**
 * A row of a DataTable; its children are its `<td>` cells, in the order of the columns (a left-out
 * column's cell left out too). Each cell gets its column's name as `data-label`, shown above the
 * value on a card; the actions cell gets none: its buttons name themselves.
 */
export function Row({ children }: { children: ComponentChildren }) {
  const columns = useContext(ColumnNames);
  return (
    <tr role="row">
      {toChildArray(children).map((cell, index) => (typeof cell === "object" ? cloneElement(cell, { "data-label": columns[index], role: "cell" }) : cell))}
    </tr>
  );
}
