// Entry point of an analysis worker thread: parses and authenticates the messages the SMTP server
// hands it (./analysis-pool), so that this work runs beside the event loop, on another core.
import { COLLECT_AFTER_BYTES, collectSoon } from "../memory/in-flight";
import { analyzeMessage, type AnalysisSettings } from "./analyze";
import { analysisResolver, asBuffer, transferable, type WorkerReply, type WorkerRequest } from "./analysis-protocol";

declare const self: Worker;

let settings: AnalysisSettings | undefined;

self.onmessage = async ({ data: request }: MessageEvent<WorkerRequest>) => {
  if (request.type === "init") {
    settings = { authservId: request.authservId, resolver: analysisResolver(request.dnsServers) };
    self.postMessage({ ready: true } satisfies WorkerReply);
    return;
  }
  let reply: WorkerReply;
  try {
    reply = { id: request.id, analysis: await analyzeMessage(asBuffer(request.raw), request.identity, settings!) };
  } catch (error) {
    reply = { id: request.id, error: { name: (error as Error).name, message: (error as Error).message } };
  }
  // The message and its attachments go back without copies: this thread is done with them.
  const large = request.raw.byteLength >= COLLECT_AFTER_BYTES;
  self.postMessage(reply, "analysis" in reply ? transferable([reply.analysis.raw, ...reply.analysis.parsed.attachments.map((attachment) => attachment.content)]) : []);
  // This thread's heap has its own garbage: the parse of a large message leaves several times its size.
  if (large) collectSoon();
};
