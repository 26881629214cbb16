/**
 * Registration and login. Registration creates, in one transaction, the user, a default
 * organization with its owner membership, a default API key, an access token and the initial
 * inbox; login checks the password under the brute-force throttle and issues an access token.
 */
import type { App } from "../app";
import { conflict, invalid, unauthorized } from "../errors";
import { newId } from "../ids";
import { insertInbox, randomInboxAddress } from "../inboxes/service";
import { issueAccessToken } from "./access-tokens";
import { createApiKey } from "./api-keys";
import { accountEmail, requiredName } from "./fields";
import { beginLoginAttempt, loginSucceeded } from "./login-throttle";
import { countRegistration } from "./registration-limit";
import { checkNewPassword, hashPassword, refuseOverlongPassword, verifyAgainstDummy, verifyPassword } from "./passwords";
import { presentCreatedApiKey, presentOrganization, presentUser } from "./present";

const nameMaxLength = 200;

export interface Registration {
  firstName?: string;
  lastName?: string;
  email?: string;
  password?: string;
  /** The client's address, for the per-address registration limit. */
  clientIp?: string;
}

export interface Credentials {
  email?: string;
  password?: string;
  /** The client's address, for the per-address brute-force limit. */
  clientIp?: string;
}

/** Not trimmed: spaces are legitimate password characters. */
function requiredPassword(password: string | undefined): string {
  if (password === undefined) throw invalid("password: is required");
  if (password === "") throw invalid("password: must not be empty");
  return password;
}

export async function register(app: App, input: Registration) {
  const firstName = requiredName("firstName", input.firstName, nameMaxLength);
  const lastName = requiredName("lastName", input.lastName, nameMaxLength);
  const email = accountEmail("username", input.email);
  const password = requiredPassword(input.password);
  checkNewPassword(password);
  await countRegistration(app, input.clientIp);
  // Hashing is slow: done before the transaction, which must await nothing but the store.
  const passwordHash = await hashPassword(password);
  return app.store.transaction(async (tx) => {
    if (await tx.accounts.findUserByEmail(email)) throw conflict("Email already registered");
    const now = app.clock.now();
    const user = { id: newId("usr"), email, firstName, lastName, passwordHash, createdAt: now, updatedAt: now };
    await tx.accounts.insertUser(user);
    const organization = await tx.accounts.createOrganization({ id: newId("org"), name: `${firstName}'s organization` }, now);
    await tx.accounts.insertMembership({ userId: user.id, organizationId: organization.id, role: "owner", createdAt: now });
    const apiKey = await createApiKey(tx, organization.id, "Default", now);
    const token = await issueAccessToken(tx, user.id, now);
    const inbox = await insertInbox(app, tx, organization.id, { email: randomInboxAddress(app.config.mailDomain) });
    return { user: presentUser(user, [organization.id]), token, organization: presentOrganization(organization), apiKey: presentCreatedApiKey(apiKey), inbox };
  });
}

/** `{user, token}`; 401 `Invalid credentials` alike for an unknown email and a wrong password, in the same time. */
export async function login(app: App, input: Credentials) {
  const email = accountEmail("username", input.email);
  const password = requiredPassword(input.password);
  refuseOverlongPassword(password);
  const attempt = { email, clientIp: input.clientIp };
  await beginLoginAttempt(app, attempt);
  const user = await app.store.accounts.findUserByEmail(email);
  const valid = user ? await verifyPassword(password, user.passwordHash) : await verifyAgainstDummy(password);
  if (!user || !valid) {
    // What fail2ban and the operator need: the address; which of the two was wrong stays unsaid, as to the client.
    app.log.warn("login failed", { clientIp: input.clientIp ?? null });
    throw unauthorized("Invalid credentials");
  }
  return app.store.transaction(async (tx) => {
    await loginSucceeded(app, tx, attempt);
    const token = await issueAccessToken(tx, user.id, app.clock.now());
    return { user: presentUser(user, await tx.accounts.organizationIdsOfUser(user.id)), token };
  });
}
