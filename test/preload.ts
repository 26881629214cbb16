// Loaded before every test file (bunfig.toml): suites start real servers and processes on real
// ports, which on a loaded 2-core machine can outlast bun's 5 s default; a test that must fail
// sooner (or may take longer: crash loops, e2e) gives its own timeout. Hooks get it too.
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(30_000);
