// The worker pool (src/workers/pool.ts): replies, errors by name, and the one way every pool
// treats a worker that stops, passes a deadline or cannot load.
import { afterEach, expect, test } from "bun:test";
import { createLogger } from "../../src/log";
import { startWorkerPool, type WorkerPool } from "../../src/workers/pool";

export interface EchoProtocol {
  setup: { prefix: string };
  request: string;
  reply: string;
}

const log = createLogger("text", "silent");
const here = async () => "here";
let pool: WorkerPool<EchoProtocol>;
const start = (url = new URL("./echo-worker.ts", import.meta.url), threads = 1) => (pool = startWorkerPool<EchoProtocol>({ name: "echo", url, threads, setup: { prefix: "echo " }, log }));
const run = (request: string, deadline?: { ms: number; error: () => Error }) => pool.run({ message: () => request, here, deadline });

afterEach(() => pool.close());

test("a request gets its worker's reply; an error its handler threw keeps its name", async () => {
  start();
  expect(await run("hello")).toBe("echo hello");
  const refused = await run("throw").catch((error: Error) => error);
  expect(refused).toMatchObject({ name: "RangeError", message: "refused" });
});

test("a worker that exits fails the request it had, and a new one takes the next", async () => {
  start();
  await run("ready");
  const [exited, waiting] = await Promise.allSettled([run("exit"), run("behind it")]);
  expect(exited).toMatchObject({ status: "rejected", reason: { message: expect.stringContaining("the echo worker stopped") } });
  expect(waiting.status).toBe("rejected");
  expect(await run("again")).toBe("echo again");
});

test("past its deadline a request fails with its own error, the others on its worker fail, and the worker is replaced", async () => {
  start();
  await run("ready");
  const deadline = { ms: 100, error: () => new Error("too slow") };
  const [hung, other] = await Promise.allSettled([run("hang", deadline), run("hang")]);
  expect(hung).toMatchObject({ status: "rejected", reason: { message: "too slow" } });
  expect(other).toMatchObject({ status: "rejected", reason: { name: "WorkerReplacedError", message: "the echo worker was replaced" } });
  expect(await run("again")).toBe("echo again");
});

test("requests go to this thread when the workers cannot load, or when there are none", async () => {
  start(new URL("./no-such-worker.ts", import.meta.url), 2);
  expect(await Promise.all([run("a"), run("b"), run("c")])).toEqual(["here", "here", "here"]);
  pool.close();
  start(undefined, 0);
  expect(await run("a")).toBe("here");
});

test("requests after close run on this thread", async () => {
  start();
  pool.close();
  expect(await run("late")).toBe("here");
});
