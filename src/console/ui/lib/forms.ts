/** Uncontrolled forms: the values, read when needed. */
export function formValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, value] of new FormData(form)) if (typeof value === "string") values[name] = value;
  return values;
}

/** The submitted values, read once on submit. */
export function submittedValues(event: SubmitEvent): Record<string, string> {
  event.preventDefault();
  return formValues(event.currentTarget as HTMLFormElement);
}

/** The checked values of the checkboxes named `name`. */
export const checkedValues = (form: HTMLFormElement, name: string) =>
  new FormData(form).getAll(name).filter((value): value is string => typeof value === "string");
