// Entry point of an analysis thread: parses and authenticates the messages the SMTP server hands
// it (./analysis-pool), so that this work runs beside the event loop, on another core.
import { COLLECT_AFTER_BYTES, collectSoon } from "../memory/in-flight";
import { serveRequests } from "../workers/serve";
import { asBuffer, transferable } from "../workers/transfer";
import { analyzeMessage, type AnalysisSettings } from "./analyze";
import { analysisSettings, type AnalysisProtocol } from "./analysis-protocol";

let settings: AnalysisSettings;

serveRequests<AnalysisProtocol>({
  setup(setup) {
    settings = analysisSettings(setup);
  },
  async handle({ raw, identity }) {
    try {
      return await analyzeMessage(asBuffer(raw), identity, settings);
    } finally {
      // This thread's heap has its own garbage: the parse of a large message leaves several times
      // its size. Collected once the reply has left.
      if (raw.byteLength >= COLLECT_AFTER_BYTES) collectSoon();
    }
  },
  // The message and its attachments go back without copies: this thread is done with them.
  transferOf: (analysis) => transferable([analysis.raw, ...analysis.parsed.attachments.map((attachment) => attachment.content)]),
});
