// A bare HTTP server in a process of its own that answers every request at once: the reference
// beside a server under test, whose answers slow down only with the machine. Prints its port.
console.log(Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ healthy: true }) }).port);
