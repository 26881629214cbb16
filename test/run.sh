#!/bin/sh
# The suite: files in parallel on every core, then the files that measure latency or memory under
# load one by one, alone on the machine (beside other files their bounds would measure those).
# The three-node test (PostgreSQL only) runs there too: its three busy processes would slow every
# file beside it past its bounds. Each part prints its own "N pass" / "N fail" summary; .ci/run adds them up.
set -u
cd "$(dirname "$0")/.."
alone="test/hardening/memory-in-flight.test.ts test/messages/search-load.test.ts test/hardening/header-bounds.test.ts test/hardening/slow-dns.test.ts test/hardening/analysis-deadline.test.ts test/smtp/slow-clients.test.ts test/multinode/three-nodes.test.ts"
ignore=""
for file in $alone; do ignore="$ignore --path-ignore-patterns=$file"; done
# shellcheck disable=SC2086
bun test --parallel "$@" $ignore
together=$?
# shellcheck disable=SC2086
bun test "$@" $alone
apart=$?
[ "$together" -eq 0 ] && [ "$apart" -eq 0 ]
