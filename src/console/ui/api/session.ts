/**
 * The signed-in session, kept in sessionStorage so it survives a reload but not the tab. It holds
 * the access token (for `/organizations/...`) and an API key the console made for itself (for
 * `/v1`). A refused key is replaced once with the token; a refused token ends the session with a
 * message for the sign-in page.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiError, request, type Method } from "./http";
import type { CreatedApiKey, User } from "./types";

export interface Session {
  token: string;
  user: User;
  organizationId: string;
  /** The console's own key and its record id, so the keys page can mark it and sign-out can revoke it. */
  apiKey: string;
  apiKeyId: string;
}

const storageKey = "inboxd.console.session";
const expiredMessage = "Your session has expired. Sign in again.";

function stored(): Session | null {
  try {
    return JSON.parse(sessionStorage.getItem(storageKey) ?? "null") as Session | null;
  } catch {
    return null;
  }
}

let current = stored();
/** Why the last session ended, for the sign-in page; cleared once a new session starts. */
let endNotice: string | undefined;
const listeners = new Set<() => void>();

function set(session: Session | null, notice?: string) {
  current = session;
  endNotice = notice;
  if (session) sessionStorage.setItem(storageKey, JSON.stringify(session));
  else sessionStorage.removeItem(storageKey);
  for (const listener of listeners) listener();
}

export function useSession(): { session: Session | null; notice?: string } {
  const [, rerender] = useState(0);
  useEffect(() => {
    const listener = () => rerender((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  return { session: current, notice: endNotice };
}

function requireSession(): Session {
  if (!current) throw new ApiError(401, expiredMessage);
  return current;
}

/** The same sign-in, whichever API key it holds now (a refused key is replaced in place). */
const sameSignIn = (session: Session) => current?.token === session.token;

/**
 * Ends the session: forgotten first, then its API key revoked with itself (so an expired token
 * does not matter). In that order, a call that meanwhile finds the key revoked has no session to
 * make a new key for: revoked first, such a call replaced the key and the sign-out was lost.
 */
async function end(session: Session, notice: string): Promise<void> {
  if (sameSignIn(session)) set(null, notice);
  await Promise.all([revokeConsoleKey(session.apiKeyId, session.apiKey), ignoringFailure(request("POST", "/auth/logout", { credential: session.token }))]);
}

/** Signing out goes on whatever the server answers: the session is forgotten already. */
const ignoringFailure = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    () => undefined,
  );

const revokeConsoleKey = (id: string, key: string) => ignoringFailure(request("DELETE", `/v1/api_keys/${encodeURIComponent(id)}`, { credential: key }));

/** Calls with the access token; a 401 means the token expired (or was revoked): back to sign-in. */
async function withToken<T>(method: Method, path: string, body?: unknown): Promise<T> {
  const session = requireSession();
  try {
    return await request<T>(method, `/organizations/${encodeURIComponent(session.organizationId)}${path}`, { body, credential: session.token });
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) await end(session, expiredMessage);
    throw error;
  }
}

const consoleKeyName = () => `Web console (${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC)`;

const createConsoleKey = (organizationId: string, token: string) =>
  request<CreatedApiKey>("POST", `/organizations/${encodeURIComponent(organizationId)}/api_keys`, { body: { name: consoleKeyName() }, credential: token });

let renewing: Promise<void> | undefined;

/** The console's key was refused (revoked on the keys page, say): make a new one with the token. */
function renewApiKey(): Promise<void> {
  renewing ??= (async () => {
    const session = requireSession();
    const key = await withToken<CreatedApiKey>("POST", "/api_keys", { name: consoleKeyName() });
    // Signed out while the key was made: it goes too, rather than stay active with no console to use it.
    if (sameSignIn(session)) set({ ...current!, apiKey: key.key, apiKeyId: key.id });
    else await revokeConsoleKey(key.id, key.key);
  })().finally(() => (renewing = undefined));
  return renewing;
}

/** Calls `/v1` with the console's API key, replacing a refused key once. */
async function withApiKey<T>(method: Method, path: string, body?: unknown): Promise<T> {
  const attempt = () => request<T>(method, `/v1${path}`, { body, credential: requireSession().apiKey });
  try {
    return await attempt();
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) throw error;
    await renewApiKey();
    return attempt();
  }
}

/**
 * `GET /v1/events` as a body to read while it streams: fetch rather than EventSource, which cannot
 * send the key in a header (and a key in the URL would be logged). A refused key is replaced once.
 */
export async function openEventStream(lastEventId: string | undefined, signal: AbortSignal): Promise<ReadableStream<Uint8Array>> {
  const attempt = () =>
    fetch("/v1/events", { headers: { authorization: `Bearer ${requireSession().apiKey}`, accept: "text/event-stream", ...(lastEventId ? { "last-event-id": lastEventId } : {}) }, signal });
  let response = await attempt();
  if (response.status === 401) {
    await renewApiKey();
    response = await attempt();
  }
  if (!response.ok || !response.body) throw new ApiError(response.status, `The live event stream is not available (HTTP ${response.status}).`);
  return response.body;
}

const verbs = <C extends (method: Method, path: string, body?: unknown) => Promise<unknown>>(call: C) => ({
  get: <T>(path: string) => call("GET", path) as Promise<T>,
  post: <T>(path: string, body: unknown = {}) => call("POST", path, body) as Promise<T>,
  patch: <T>(path: string, body: unknown) => call("PATCH", path, body) as Promise<T>,
  delete: <T>(path: string) => call("DELETE", path) as Promise<T>,
});

/** The public `/v1` API, as this organization. */
export const v1 = verbs(withApiKey);
/** `/organizations/{organization}/...`, as the signed-in user. */
export const account = verbs(withToken);

async function start(user: User, token: string): Promise<void> {
  const organizationId = user.organizations[0];
  if (!organizationId) throw new ApiError(403, "This account belongs to no organization.");
  const key = await createConsoleKey(organizationId, token);
  set({ token, user, organizationId, apiKey: key.key, apiKeyId: key.id });
}

export async function signIn(username: string, password: string): Promise<void> {
  const { user, token } = await request<{ user: User; token: string }>("POST", "/auth/login", { body: { username, password } });
  await start(user, token);
}

export interface SignUp {
  firstName: string;
  lastName: string;
  username: string;
  password: string;
}

/** Returns the account's default API key, which the console shows this one time. */
export async function signUp(fields: SignUp): Promise<CreatedApiKey> {
  const created = await request<{ user: User; token: string; apiKey: CreatedApiKey }>("POST", "/auth/register", { body: fields });
  await start(created.user, created.token);
  return created.apiKey;
}

export async function signOut(): Promise<void> {
  if (current) await end(current, "You are signed out.");
}

/** An expired token is noticed even while the API key still works: the keys list is the cheapest call that takes it. */
export const checkToken = () => withToken("GET", "/api_keys?per=1").then(() => undefined);
