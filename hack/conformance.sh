#!/usr/bin/env bash
# Runs the Kubernetes conformance suite (test/e2e, [Conformance] specs) of the
# pinned release against `podtrace serve`. Not part of CI: building e2e.test
# and running the suite takes hours on 2 cores.
#
#   hack/conformance.sh [extra e2e.test flags...]
#
# Environment: WORK (default /tmp/podtrace-conformance) holds the build, the
# cluster's data dir and the report; FOCUS and SKIP override the ginkgo
# regexps; PROCS (default 6) runs that many specs at once, as upstream's
# hack/ginkgo-e2e.sh does (most of a failing spec's time is a wait);
# TIMEOUT (default 24h) bounds the whole suite; RUNTIME (sim or containerd)
# picks the nodes' container runtime.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/podtrace-conformance}
k8s=$(cd "$repo" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
mkdir -p "$work/build"

# e2e.test is built in a module of its own that requires the same release,
# so its test-only dependencies (ginkgo, gomega) stay out of podtrace's go.mod.
if [ ! -x "$work/e2e.test" ]; then
  cd "$work/build"
  [ -f go.mod ] || go mod init podtrace.dev/conformance >/dev/null 2>&1
  grep '^replace k8s.io/' "$repo/go.mod" >> go.mod
  # -t: the suite's own test dependencies too (e2e.test is test/e2e's test
  # binary); no tidy, which would drop a requirement no file here imports.
  go get -t "k8s.io/kubernetes/test/e2e@$k8s"
  echo "building e2e.test of k8s.io/kubernetes $k8s ..."
  go test -c -o "$work/e2e.test" k8s.io/kubernetes/test/e2e
fi
if [ ! -x "$work/ginkgo" ]; then
  (cd "$work/build" && go build -o "$work/ginkgo" github.com/onsi/ginkgo/v2/ginkgo)
fi

cd "$repo"
go build -o "$work/podtrace" ./cmd/podtrace
# containerd's nodes chain podtrace's CNI plugin, looked up beside podtrace.
[ "${RUNTIME:-sim}" = containerd ] && go build -o "$work/podtrace-cni" ./cmd/podtrace-cni
rm -rf "$work/cluster"
# RUNTIME=containerd runs the suite on real containers (root, Linux), with
# the suite's own agnhost and busybox built here and served under their
# registry.k8s.io names (--e2e-images), so no spec needs the internet.
runtime=(--runtime "${RUNTIME:-sim}")
[ "${RUNTIME:-sim}" = containerd ] && runtime+=(--e2e-images)
"$work/podtrace" serve --data-dir "$work/cluster" --nodes 3 "${runtime[@]}" >"$work/serve.log" 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; wait $serve 2>/dev/null' EXIT
for _ in $(seq 1200); do # minutes with --e2e-images the first time
  [ -f "$work/cluster/kubeconfig" ] && grep -q KUBECONFIG "$work/serve.log" && break
  sleep 1
done

# Specs that need a real container image, exec into a container or pod
# networking cannot pass on the simulated runtime; the README lists them.
focus=${FOCUS:-'\[Conformance\]'}
skip=${SKIP:-'\[Serial\]|\[Disruptive\]'}
mkdir -p "$work/report"
"$work/ginkgo" --procs="${PROCS:-6}" --timeout="${TIMEOUT:-24h}" --no-color \
  --focus="$focus" --skip="$skip" --output-dir="$work/report" --json-report=report.json \
  "$work/e2e.test" -- --kubeconfig="$work/cluster/kubeconfig" --provider=skeleton "$@" 2>&1 | tee "$work/e2e.log"
