/** Dates, sizes and addresses as the console shows them. */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });
const dayAndMonth = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short" });
const fullDate = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

/** As mail clients date a list: the time today, the day and month this year, the full date before. */
export function formatTime(iso: string, now = new Date()): string {
  const date = new Date(iso);
  if (date.toDateString() === now.toDateString()) return timeOnly.format(date);
  return date.getFullYear() === now.getFullYear() ? dayAndMonth.format(date) : fullDate.format(date);
}

export const formatFullTime = (iso: string) => dateTime.format(new Date(iso));

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** "Acme Bank <bank@acme.test>", or the bare address without a name. */
export const nameAndAddress = (address: string, name?: string) => (name ? `${name} <${address}>` : address);

/** "a@x, b@y" or "; " separated input into addresses. */
export const addressList = (text: string) =>
  text
    .split(/[,;\s]+/)
    .map((address) => address.trim())
    .filter(Boolean);

export const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;
