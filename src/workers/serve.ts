/**
 * The threads' side of a pool (./pool): answers the setup with "ready" once it is done, then each
 * request with its reply, or with the error its handler threw.
 */
import type { FromThread, ToThread, WorkerProtocol } from "./pool";

declare const self: Worker;

export interface RequestHandler<P extends WorkerProtocol> {
  setup(setup: P["setup"]): void;
  handle(request: P["request"]): P["reply"] | Promise<P["reply"]>;
  /** The ArrayBuffers of a reply that move back instead of being copied: this thread is done with them. */
  transferOf?(reply: P["reply"]): ArrayBuffer[];
}

export function serveRequests<P extends WorkerProtocol>(handler: RequestHandler<P>): void {
  self.onmessage = async ({ data: message }: MessageEvent<ToThread<P>>) => {
    if ("setup" in message) {
      handler.setup(message.setup);
      self.postMessage({ ready: true } satisfies FromThread<P>);
      return;
    }
    let answer: FromThread<P>;
    let transfer: ArrayBuffer[] = [];
    try {
      const reply = await handler.handle(message.request);
      answer = { id: message.id, reply };
      transfer = handler.transferOf?.(reply) ?? [];
    } catch (error) {
      answer = { id: message.id, error: { name: (error as Error).name, message: (error as Error).message } };
    }
    self.postMessage(answer, transfer);
  };
}
