// Entry point of a DKIM signing thread (./sign-pool): RSA and Ed25519 signatures of outgoing
// messages are made here, on another core, while the event loop keeps the SMTP sessions moving.
import { signMessage, type RsaEngine, type SigningKey } from "../dkim/sign";
import type { SignReply, SignRequest } from "./sign-pool";

declare const self: Worker;

/** Key sets as the pool announced them; a few recent ones are enough (one per sending domain). */
const keySets = new Map<number, { domain: string; keys: SigningKey[]; rsaEngine: RsaEngine }>();
const keptKeySets = 256;

self.onmessage = ({ data: request }: MessageEvent<SignRequest>) => {
  if (request.type === "keys") {
    keySets.set(request.keySet, { domain: request.domain, keys: request.keys, rsaEngine: request.rsaEngine });
    if (keySets.size > keptKeySets) keySets.delete(keySets.keys().next().value!);
    return;
  }
  let reply: SignReply;
  try {
    const keySet = keySets.get(request.keySet);
    if (!keySet) throw new Error(`unknown key set ${request.keySet}`);
    const signed = signMessage(request.raw, { ...keySet, signTime: new Date(request.signTime) });
    reply = { id: request.id, signed };
  } catch (error) {
    reply = { id: request.id, error: (error as Error).message };
  }
  self.postMessage(reply, "signed" in reply ? [reply.signed.buffer as ArrayBuffer] : []);
};
