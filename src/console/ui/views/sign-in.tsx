/** Signing in (`/auth/login`) and creating an account (`/auth/register`). */
import type { InputHTMLAttributes } from "preact";
import { signIn, signUp } from "../api/session";
import type { CreatedApiKey } from "../api/types";
import { ErrorNote } from "../components/common";
import { submittedValues } from "../lib/forms";
import { useAction } from "../lib/resource";
import { href, navigate } from "../lib/router";

function Field({ label, ...input }: { label: string } & InputHTMLAttributes) {
  return (
    <label>
      {label}
      <input {...input} required />
    </label>
  );
}

export function SignIn({ notice, signingUp, onSignedUp }: { notice?: string; signingUp: boolean; onSignedUp(key: CreatedApiKey): void }) {
  const action = useAction();
  const submit = (event: SubmitEvent) => {
    const values = submittedValues(event);
    void action.run(async () => {
      if (signingUp) onSignedUp(await signUp({ firstName: values.firstName!, lastName: values.lastName!, username: values.username!, password: values.password! }));
      else await signIn(values.username!, values.password!);
      navigate("inboxes");
    });
  };
  return (
    <main class="sign-in" id="main">
      <form class="card" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">{signingUp ? "Create your inboxd account" : "Sign in to inboxd"}</h1>
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        {signingUp ? (
          <div class="row">
            <Field name="firstName" label="First name" autocomplete="given-name" />
            <Field name="lastName" label="Last name" autocomplete="family-name" />
          </div>
        ) : null}
        <Field name="username" label="Email" type="email" autocomplete="username" />
        <Field name="password" label="Password" type="password" autocomplete={signingUp ? "new-password" : "current-password"} minLength={signingUp ? 8 : undefined} />
        <ErrorNote message={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? "One moment…" : signingUp ? "Create account" : "Sign in"}
        </button>
        <p class="muted">
          {signingUp ? (
            <>
              Have an account? <a href={href("signin")}>Sign in</a>
            </>
          ) : (
            <>
              New here? <a href={href("signup")}>Create an account</a>
            </>
          )}
        </p>
      </form>
    </main>
  );
}
