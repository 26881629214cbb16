/**
 * Issuance over ACME (RFC 8555) with the acme-client library: the account (one per directory,
 * kept in the database), a fresh key and CSR per certificate, and HTTP-01 challenges (§8.3)
 * whose key authorizations go to the database, so that whichever node the CA reaches answers.
 */
import { Agent } from "node:https";
import * as acme from "acme-client";
import type { App } from "../app";
import { readCertificates } from "../smtp/tls";

/** How long the CA may take to look at a challenge before its key authorization is forgotten. */
const CHALLENGE_LIFETIME_MS = 60 * 60_000;
/** One request to the CA; acme-client waits forever by default. */
const REQUEST_TIMEOUT_MS = 30_000;

export type IssuedCertificate = { certificatePem: string; privateKeyPem: string; notBefore: number; notAfter: number };

let configuredFor: string | undefined;

/**
 * acme-client sends every request through one axios instance of its own: its timeout, and the CA
 * of a private ACME server (INBOXD_ACME_CA_FILE), are set there.
 */
function configureHttp(caFile: string) {
  if (configuredFor === caFile) return;
  acme.axios.defaults.timeout = REQUEST_TIMEOUT_MS;
  acme.axios.defaults.httpsAgent = caFile ? new Agent({ ca: readCertificates("INBOXD_ACME_CA_FILE", caFile) }) : undefined;
  configuredFor = caFile;
}

/** The account of INBOXD_ACME_DIRECTORY, made (and stored) on first use. */
async function accountClient(app: App): Promise<acme.Client> {
  const { acmeDirectory, acmeEmail } = app.config;
  const stored = await app.store.certificates.findAccount(acmeDirectory);
  const now = app.clock.now();
  const account = stored ?? { directoryUrl: acmeDirectory, email: acmeEmail!, privateKeyPem: (await acme.crypto.createPrivateEcdsaKey()).toString(), accountUrl: null, createdAt: now, updatedAt: now };
  const client = new acme.Client({ directoryUrl: acmeDirectory, accountKey: account.privateKeyPem, ...(account.accountUrl ? { accountUrl: account.accountUrl } : {}) });
  if (!account.accountUrl || account.email !== acmeEmail) {
    // RFC 8555 §7.3: creating an account with a known key returns the existing one, so this is safe to repeat.
    await client.createAccount({ termsOfServiceAgreed: true, contact: [`mailto:${acmeEmail}`] });
    await app.store.certificates.saveAccount({ ...account, email: acmeEmail!, accountUrl: client.getAccountUrl(), updatedAt: now });
  }
  return client;
}

/** RFC 5280 Appendix A.1: ub-common-name. */
const LONGEST_COMMON_NAME = 64;

/**
 * The CSR for `name`: in the subject alternative names, where clients look (RFC 6125 §6.4.4),
 * and as the common name too while it fits one. Let's Encrypt refuses a longer common name
 * ("CN was longer than 64 bytes"), which mta-sts.<domain> of a custom domain of 57 characters or
 * more would be; without one, it issues a certificate with the name in its SAN alone.
 */
export async function certificateRequest(name: string, key: Buffer): Promise<Buffer> {
  const [, csr] = await acme.crypto.createCsr({ commonName: name.length <= LONGEST_COMMON_NAME ? name : undefined, altNames: [name] }, key);
  return csr;
}

/** One new certificate for `name`, proved with HTTP-01 on port 80. */
export async function issueCertificate(app: App, name: string): Promise<IssuedCertificate> {
  configureHttp(app.config.acmeCaFile);
  const client = await accountClient(app);
  // RSA rather than ECDSA: some SMTP peers still in service negotiate RSA only.
  const key = await acme.crypto.createPrivateRsaKey(2048);
  const csr = await certificateRequest(name, key);
  const certificatePem = await client.auto({
    csr,
    email: app.config.acmeEmail,
    termsOfServiceAgreed: true,
    challengePriority: ["http-01"],
    // acme-client would fetch the challenge itself first, through the system's resolver and port 80; the CA's own look is the one that counts.
    skipChallengeVerification: true,
    challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
      if (challenge.type !== "http-01") throw new Error(`challenge ${challenge.type} is not offered by inboxd`);
      await app.store.certificates.putChallenge(challenge.token, keyAuthorization, app.clock.now() + CHALLENGE_LIFETIME_MS);
    },
    challengeRemoveFn: async (_authz, challenge) => {
      await app.store.certificates.removeChallenge(challenge.token);
    },
  });
  const info = acme.crypto.readCertificateInfo(certificatePem);
  return { certificatePem, privateKeyPem: key.toString(), notBefore: info.notBefore.getTime(), notAfter: info.notAfter.getTime() };
}
