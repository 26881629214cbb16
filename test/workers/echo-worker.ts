// The worker of pool.test.ts: echoes, throws, exits or hangs, as each request says.
import { serveRequests } from "../../src/workers/serve";
import type { EchoProtocol } from "./pool.test";

let prefix = "";

serveRequests<EchoProtocol>({
  setup(setup) {
    prefix = setup.prefix;
  },
  async handle(request) {
    if (request === "throw") throw new RangeError("refused");
    if (request === "exit") process.exit(1);
    if (request === "hang") await new Promise(() => {});
    return `${prefix}${request}`;
  },
});
