#!/usr/bin/env bash
# The demo on a fresh clone: builds the plugin and the sandbox, then runs the whole story against
# two in-memory management clusters with simulated Cluster API controllers, using the real plugin
# through kubectl's plugin lookup. Extra arguments go to `capi-sandbox demo` (e.g. --delay-ms 50).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
echo "building kubectl-capi and capi-sandbox-tools (debug; the first build takes a few minutes)..." >&2
# cargo's own progress (one line per crate, and a bar on a terminal) shows where the build is.
cargo build --locked -p kubectl-capi -p capi-sandbox-tools
echo "built; starting the demo" >&2
exec target/debug/capi-sandbox demo --plugin "$root/target/debug/kubectl-capi" "$@"
