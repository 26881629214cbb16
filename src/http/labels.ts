/** The request fields that carry labels: a message's list (send, PATCH) and the lists' `label` filter. */
import { t } from "elysia";
import { maxLabelLength, maxLabels } from "../messages/labels";

const label = t.String({ minLength: 1, maxLength: maxLabelLength });

export const labelList = (description: string) =>
  t.Array(label, { maxItems: maxLabels, error: `must be an array of at most ${maxLabels} labels of 1 to ${maxLabelLength} characters`, description });

export const labelQuery = (description: string) =>
  t.String({ minLength: 1, maxLength: maxLabelLength, error: `must be a label of 1 to ${maxLabelLength} characters`, description: `${description} (exact, case-sensitive)` });
