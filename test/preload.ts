// Loaded before every test file (bunfig.toml): suites start real servers and processes on real
// ports, which on a loaded 2-core machine can outlast bun's 5 s default; a test that must fail
// sooner (or may take longer: crash loops, e2e) gives its own timeout. Hooks get it too. A hook
// here runs once for the whole run: after the last file, what test/at-end.ts holds.
import { afterAll, setDefaultTimeout } from "bun:test";
import { runEndTasks } from "./at-end";

setDefaultTimeout(30_000);
afterAll(runEndTasks);
