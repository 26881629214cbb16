/**
 * Copying a value. The Clipboard API exists only in secure contexts (https, localhost); a console
 * opened over plain http on a server's address falls back to copying a selected text field.
 */
export async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && isSecureContext) return navigator.clipboard.writeText(text);
  const field = document.createElement("textarea");
  field.value = text;
  field.setAttribute("readonly", "");
  field.className = "offscreen";
  document.body.append(field);
  field.select();
  const copied = document.execCommand("copy");
  field.remove();
  if (!copied) throw new Error("Copying is not allowed here: select the text and copy it by hand.");
}
