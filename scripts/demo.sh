#!/usr/bin/env bash
# Shows kubectl-capi at work against an in-memory management cluster: builds the plugin and the
# sandbox, serves a sandbox cluster, and runs `kubectl capi` through kubectl's plugin lookup.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --quiet --locked -p kubectl-capi -p capi-sandbox
dir=$(mktemp -d)
target/debug/capi-sandbox serve --kubeconfig "$dir/kubeconfig" 2> "$dir/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -s "$dir/kubeconfig" ] && break; sleep 0.1; done
[ -s "$dir/kubeconfig" ] || { cat "$dir/serve.log" >&2; exit 1; }
export PATH="$root/target/debug:$PATH" KUBECONFIG="$dir/kubeconfig" KUBECACHEDIR="$dir/cache"
run() { printf '\n$ %s\n' "$*"; "$@"; }
run kubectl get providers.clusterctl.cluster.x-k8s.io -A
run kubectl capi version
run kubectl capi version -o json
