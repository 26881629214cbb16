/** Uncontrolled forms: the submitted values, read once on submit. */
export function submittedValues(event: SubmitEvent): Record<string, string> {
  event.preventDefault();
  const values: Record<string, string> = {};
  for (const [name, value] of new FormData(event.currentTarget as HTMLFormElement)) if (typeof value === "string") values[name] = value;
  return values;
}

/** The checked values of the checkboxes named `name`. */
export const checkedValues = (form: HTMLFormElement, name: string) =>
  new FormData(form).getAll(name).filter((value): value is string => typeof value === "string");
