/**
 * A message's labels after it is stored: replaced whole, or some added and some removed, within the
 * limits a send's labels have. No event reports the change: the service's nine events have none
 * for an updated message (src/events/names.ts).
 */
import { invalid } from "../errors";

/** Labels a message may hold, and the length of one (the same at send). */
export const maxLabels = 50;
export const maxLabelLength = 100;

export interface LabelChange {
  /** The new labels, replacing the old ones. */
  labels?: string[];
  addLabels?: string[];
  removeLabels?: string[];
}

/** Each label once, in the order first given. */
export const uniqueLabels = (labels: string[]) => [...new Set(labels)];

export const changesLabels = (change: LabelChange) => change.labels !== undefined || change.addLabels !== undefined || change.removeLabels !== undefined;

/** The labels after the change; a label added twice, or added when it is there, is there once. 422 past the limit or for both ways at once. */
export function labelsAfter(current: string[], change: LabelChange): string[] {
  const replaces = change.labels !== undefined;
  if (replaces && (change.addLabels !== undefined || change.removeLabels !== undefined)) throw invalid("labels: give either labels (to replace them) or addLabels and removeLabels, not both");
  const removed = new Set(change.removeLabels ?? []);
  const labels = replaces ? uniqueLabels(change.labels!) : uniqueLabels([...current, ...(change.addLabels ?? [])]).filter((label) => !removed.has(label));
  if (labels.length > maxLabels) throw invalid(`${replaces ? "labels" : "addLabels"}: a message holds at most ${maxLabels} labels; this would give it ${labels.length}`);
  return labels;
}
