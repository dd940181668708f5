#!/usr/bin/env bash
# `make test`'s wrapper: runs its steps (the command given) with the Kubernetes binaries' Go builds
# (scripts/kube-binaries.sh) already started beside them. On a fresh machine those builds are the longest
# step of all (13-17 minutes of both cores), while the bootstrap before them mostly waits on pip and
# Maven downloads: started first, and at a lower CPU priority so the steps ahead of the tests keep the
# cores they need, they are done minutes sooner. scripts/test-deps.sh still runs kube-binaries.sh: it
# waits on the build's lock, finds the binaries built and goes on, or builds (and reports) itself if
# this early build failed. Up to date, the early run prints one line and exits. Whatever happens to the
# command, the builds stop with this script: they never run on unattended.
# Usage: scripts/beside-kube-builds.sh COMMAND [ARGS...]   (SPARKLINK_SKIP_KUBE=1: just the command)
set -uo pipefail
cd "$(dirname "$0")/.."

builds=""
if [[ "${SPARKLINK_SKIP_KUBE:-}" != 1 ]] && command -v go >/dev/null 2>&1; then
  nice -n 10 bash scripts/kube-binaries.sh &
  builds=$!
  # Its children first: once it is gone they are no longer its children to find.
  trap '[[ -z "$builds" ]] || kill "$builds" $(pgrep -P "$builds") 2>/dev/null || true' EXIT
fi

"$@"
