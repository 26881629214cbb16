// Entry point of an analysis thread: parses and authenticates the messages the SMTP server hands
// it (./analysis-pool), so that this work runs beside the event loop, on another core.
import { COLLECT_AFTER_BYTES, collectSoon } from "../memory/in-flight";
import { lowerThisThreadPriority } from "../workers/priority";
import { serveRequests } from "../workers/serve";
import { asBuffer, transferable } from "../workers/transfer";
import { analyzeMessage, type AnalysisSettings } from "./analyze";
import { analysisSettings, type AnalysisProtocol } from "./analysis-protocol";

let settings: AnalysisSettings;

/**
 * Analysis yields the CPU to the event loop: while mail arrives, the sessions' 250s and the API
 * come first and the analysis takes the CPU they leave, then all of it once the burst is over. A
 * message waits for its analysis only after its 250 (with INBOXD_DMARC_ENFORCE the session waits
 * on it, and the event loop, waiting, leaves it the CPU). Measured in docs/benchmarks.md
 * ("Analysis through the burst").
 */
const analysisNice = 10;
lowerThisThreadPriority(analysisNice);

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
