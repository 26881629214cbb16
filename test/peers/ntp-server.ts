// An SNTP server on 127.0.0.1 (RFC 4330 §5): answers each client request with its own time,
// moved by `offsetMs`, so a test can present a clock that is right or wrong.
import * as dgram from "node:dgram";

const NTP_EPOCH_OFFSET_S = 2_208_988_800;

export type NtpServer = { address: string; offsetMs: number; close(): void };

export async function startNtpServer(offsetMs = 0): Promise<NtpServer> {
  const socket = dgram.createSocket("udp4");
  const server: NtpServer = { address: "", offsetMs, close: () => socket.close() };
  socket.on("message", (request, peer) => {
    if (request.length < 48 || (request[0] & 0x07) !== 3) return;
    const reply = Buffer.alloc(48);
    reply[0] = 0x24; // LI 0, version 4, mode 4 (server)
    reply[1] = 2; // stratum
    const ms = Date.now() + server.offsetMs;
    const seconds = Math.floor(ms / 1000) + NTP_EPOCH_OFFSET_S;
    const fraction = Math.floor(((ms % 1000) / 1000) * 2 ** 32);
    for (const offset of [32, 40]) {
      reply.writeUInt32BE(seconds, offset);
      reply.writeUInt32BE(fraction, offset + 4);
    }
    request.copy(reply, 24, 40, 48); // originate timestamp = the client's transmit timestamp
    socket.send(reply, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  server.address = `127.0.0.1:${socket.address().port}`;
  return server;
}
