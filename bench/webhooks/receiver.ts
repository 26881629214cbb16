// The benchmark's webhook receiver, in its own process so that it does not share a thread with
// what is measured: answers every POST with 200 and counts them; GET /count reports the count.
let received = 0;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    if (request.method === "GET") return new Response(String(received));
    await request.arrayBuffer();
    received++;
    return new Response("ok");
  },
});
process.stdout.write(`${server.port}\n`);
