#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager from the Go module proxy into .cache/kube/bin,
# for sparklink's local Kubernetes API server (`sparklink k8s start`, the operator and its tests).
# Called by scripts/test-deps.sh (`make test`) and, when a binary is missing, by the first start of a local
# API server (sparklink.platform.kube_binaries); safe to run on its own. `make demo` never needs it. The main modules live in go/etcd and go/kube
# (go.sum committed). Stamp-keyed like the other bootstrap steps: when the modules, this script and the
# Go version are unchanged and the binaries exist, it does nothing. Uses the default GOMODCACHE/GOCACHE,
# so a rebuild after a change takes seconds; a cold build takes ~13 minutes on 2 cores.
# Exit status: 0 built or up to date, 1 the build failed, 2 it cannot run here (no Go).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=.cache/kube/bin
stamps=.cache/stamps
logs=.cache/kube/logs
mkdir -p "$bin" "$stamps" "$logs"

say() { printf '\033[1;34m[bootstrap]\033[0m %s\n' "$*"; }
fail() { echo "bootstrap: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || {
  echo "bootstrap: 'go' not found: the local Kubernetes API server (etcd, kube-apiserver," \
    "kube-controller-manager) is built from the Go module proxy; install Go 1.26 or newer, then run" \
    "bash scripts/kube-binaries.sh (SPARKLINK_SKIP_KUBE=1 skips it for \`make test\`)." >&2
  exit 2
}

# The checksum database is not reachable here: go.sum (committed) is the trust anchor instead. Never
# fetch another toolchain; build static binaries without cgo, as upstream does for these servers.
export GOSUMDB=off GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local CGO_ENABLED=0

kube_version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' go/kube/go.mod)
[[ $kube_version =~ ^v([0-9]+)\.([0-9]+)\. ]] || fail "cannot read the k8s.io/kubernetes version from go/kube/go.mod"
kube_major=${BASH_REMATCH[1]}
kube_minor=${BASH_REMATCH[2]}

inputs=$( (go version; cat "$0" go/etcd/go.mod go/etcd/go.sum go/etcd/*.go go/kube/go.mod go/kube/go.sum \
  go/kube/cmd/*/main.go) | sha256sum | cut -d' ' -f1)
binaries=(etcd kube-apiserver kube-controller-manager)
up_to_date() {
  local name
  for name in "${binaries[@]}"; do [[ -x $bin/$name ]] || return 1; done
  [[ "$(cat $stamps/kube 2>/dev/null)" == "$inputs" ]]
}
if up_to_date; then
  say "kubernetes binaries up to date ($bin: etcd, kube-apiserver $kube_version, kube-controller-manager)"
  exit 0
fi

# One build at a time, even when two bootstraps (or two first starts) run at once: each needs ~2 GB and
# both cores. Whoever waited finds the other's binaries and stops there.
exec 9>.cache/kube/build.lock
if ! flock -n 9; then
  say "another build of the Kubernetes binaries is running; waiting for it (lock: .cache/kube/build.lock)"
  flock 9
fi
if up_to_date; then
  say "kubernetes binaries up to date ($bin: etcd, kube-apiserver $kube_version, kube-controller-manager)"
  exit 0
fi

# Prints how far a build got every 30 s: a cold kube-apiserver build is silent for minutes otherwise.
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=$4 expect=$5
  local log=$root/$logs/$name.log tmp=$root/$bin/.$name.tmp
  local start=$SECONDS attempt status
  for attempt in 1 2 3; do
    say "building $name from the Go module proxy ... first time only, $expect on 2 cores; log: $logs/$name.log"
    ( cd "$dir" && exec go build -v -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg" ) >"$log" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null; do
      for _ in $(seq 1 30); do kill -0 $pid 2>/dev/null || break; sleep 1; done
      kill -0 $pid 2>/dev/null && say "  $name: $((SECONDS - start))s, $(grep -c . "$log") packages built or fetched"
    done
    status=0
    wait $pid || status=$?
    if [[ $status -eq 0 ]]; then
      mv -f "$tmp" "$bin/$name"
      say "built $name in $((SECONDS - start))s"
      return 0
    fi
    rm -f "$tmp"
    # Network trouble while fetching modules is worth another try (what was fetched stays cached).
    grep -qiE "dial tcp|i/o timeout|connection (reset|refused)|TLS handshake|unexpected EOF|: 50[234] " "$log" \
      || break
    say "fetching modules for $name failed (attempt $attempt); retrying"
  done
  tail -25 "$log" >&2
  fail "building $name failed (full log: $logs/$name.log). Check that the Go module proxy is reachable" \
    "and that Go is 1.26 or newer (go version), then run bash scripts/kube-binaries.sh again."
}

version_flags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  version_flags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$kube_major -X $pkg.gitMinor=$kube_minor"
  version_flags+=" -X $pkg.gitTreeState=clean"
done

build etcd go/etcd . "-s -w" "~3 minutes"
build kube-apiserver go/kube ./cmd/kube-apiserver "-s -w$version_flags" "~9 minutes"
build kube-controller-manager go/kube ./cmd/kube-controller-manager "-s -w$version_flags" "~2 minutes"
echo "$inputs" > $stamps/kube
say "kubernetes binaries ready in $bin"
