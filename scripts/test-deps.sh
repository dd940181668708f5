#!/usr/bin/env bash
# What only the test suite needs beyond scripts/bootstrap.sh, run by `make test` (and so by .ci/run):
#   1. the reference Apache Connect and MirrorMaker 2 peers' jars (jvm/kafka-peers, .cache/jars/kafka-peers),
#      and the Connect plugins the Java-plugin tests run, from their published Maven artifacts: Debezium's
#      PostgreSQL connector and Apache's connect-file (jvm/plugins, a plugin.path directory in .cache/plugins);
#   2. Debian's PostgreSQL server (initdb, postgres), which the JDBC connector tests start on loopback, and
#      Debian's Chromium, which the browser tests drive headless;
#   3. etcd, kube-apiserver and kube-controller-manager, built from the Go module proxy into .cache/kube/bin
#      (scripts/kube-binaries.sh; minutes the first time, seconds after, side by side with 1 and 2): the
#      local Kubernetes API server of the operator tests. SPARKLINK_SKIP_KUBE=1 skips it; those tests then
#      fail saying what to run.
# `make demo` needs none of them. Idempotent: a second run installs and builds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache

say() { printf '\033[1;34m[bootstrap]\033[0m %s\n' "$*"; }

# The Go builds are minutes of CPU the first time, while the jar downloads and the apt installs below
# mostly wait on the network: they run side by side, and this script waits for the builds at its end.
# (Up to date, the builds' step takes a second and prints one line.)
kube_pid=""
if [[ "${SPARKLINK_SKIP_KUBE:-}" == 1 ]]; then
  say "skipping the Kubernetes binaries (SPARKLINK_SKIP_KUBE=1)"
else
  bash scripts/kube-binaries.sh &
  kube_pid=$!
  # A failed step below exits this script: the builds stop with it instead of running on unattended.
  # (Its children first: once it is gone they are no longer its children to find.)
  trap '[[ -z "$kube_pid" ]] || kill "$kube_pid" $(pgrep -P "$kube_pid") 2>/dev/null || true' EXIT
fi

bash scripts/fetch-jars.sh kafka-peers plugins

# The JDBC connector tests run a throwaway PostgreSQL server from Debian's package (as root: apt-get).
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; then
  say "postgresql up to date ($(ls -d /usr/lib/postgresql/*/ | head -1))"
else
  command -v apt-get >/dev/null 2>&1 || {
    echo "bootstrap: PostgreSQL (initdb, pg_ctl) is missing and there is no apt-get here: install the" \
         "postgresql server with your system's package manager, then run scripts/test-deps.sh again." >&2
    exit 1
  }
  log=.cache/apt-postgresql.log
  say "installing Debian's postgresql package for the JDBC tests (first time only, ~1 minute; log: $log)"
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql; } \
      > "$log" 2>&1; then
    tail -20 "$log" >&2
    echo "bootstrap: could not install postgresql (full log: $log)." >&2
    exit 1
  fi
fi

# The REST security tests drive Debian's headless Chromium with Playwright (executable_path, so Playwright
# downloads no browser of its own): a page on another origin must not be able to create a connector.
if [[ -x /usr/bin/chromium ]]; then
  say "chromium up to date ($(/usr/bin/chromium --version 2>/dev/null | head -1))"
else
  command -v apt-get >/dev/null 2>&1 || {
    echo "bootstrap: Chromium (/usr/bin/chromium) is missing and there is no apt-get here: install it with your" \
         "system's package manager, then run scripts/test-deps.sh again." >&2
    exit 1
  }
  log=.cache/apt-chromium.log
  say "installing Debian's chromium package for the browser tests (first time only; log: $log)"
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } \
      > "$log" 2>&1; then
    tail -20 "$log" >&2
    echo "bootstrap: could not install chromium (full log: $log)." >&2
    exit 1
  fi
fi

if [[ -n "$kube_pid" ]]; then
  status=0
  wait "$kube_pid" || status=$?
  kube_pid=""
  exit $status
fi
