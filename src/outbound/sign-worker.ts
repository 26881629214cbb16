// Entry point of a DKIM signing thread (./sign-pool): RSA and Ed25519 signatures of outgoing
// messages are made here, on another core, while the event loop keeps the SMTP sessions moving.
import { signMessage, type RsaEngine, type SigningKey } from "../dkim/sign";
import { serveRequests } from "../workers/serve";
import { transferable } from "../workers/transfer";
import { KEY_SETS_KEPT, type SignProtocol } from "./sign-protocol";

let rsaEngine: RsaEngine;
/** Key sets as the pool sent them, in that order (its notes on this thread forget them alike). */
const keySets = new Map<number, { domain: string; keys: SigningKey[] }>();

serveRequests<SignProtocol>({
  setup(setup) {
    rsaEngine = setup.rsaEngine;
  },
  handle(request) {
    if (request.keys) {
      keySets.set(request.keySet, request.keys);
      if (keySets.size > KEY_SETS_KEPT) keySets.delete(keySets.keys().next().value!);
    }
    const keySet = keySets.get(request.keySet);
    if (!keySet) throw new Error(`unknown key set ${request.keySet}`);
    return signMessage(request.raw, { ...keySet, rsaEngine, signTime: new Date(request.signTime) });
  },
  transferOf: (signed) => transferable([signed]),
});
