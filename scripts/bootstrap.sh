#!/usr/bin/env bash
# Idempotent set-up for sparklink, run by `make demo` and `make test`:
#   1. a virtualenv in .venv with the pinned Python dependencies and sparklink itself (editable);
#   2. the JVM jars from Maven Central into .cache/jars/<set>, one set per pom under jvm/;
#   3. the MirrorMaker producer interceptor jar (jvm/interceptor, compiled with javac) in .cache/jars/interceptor;
#   4. Debian's PostgreSQL server (initdb, postgres), which the JDBC connector tests start on loopback;
#   5. etcd, kube-apiserver and kube-controller-manager, built from the Go module proxy into .cache/kube/bin
#      (scripts/kube-binaries.sh; ~13 minutes cold, seconds after): the local Kubernetes API server.
# Each step is skipped when a stamp holding the hash of its inputs matches, so a second run takes
# seconds and downloads nothing. Delete .venv or .cache to force a rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stamps=.cache/stamps
mkdir -p "$stamps"

say() { printf '\033[1;34m[bootstrap]\033[0m %s\n' "$*"; }
fingerprint() { cat "$@" | sha256sum | cut -d' ' -f1; }

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "bootstrap: '$1' not found; $2" >&2; exit 1; }
}
need python3 "install Python 3.11+"
need java "install OpenJDK 17 (apt-get install openjdk-17-jdk-headless)"
need mvn "install Maven (apt-get install maven)"

py_inputs=(requirements.lock pyproject.toml)
py_hash=$(fingerprint "${py_inputs[@]}")
if [[ ! -x .venv/bin/python || "$(cat $stamps/python 2>/dev/null)" != "$py_hash" ]]; then
  say "creating .venv and installing pinned Python packages"
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.lock
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
  echo "$py_hash" > $stamps/python
else
  say "python packages up to date (.venv)"
fi

for set in kafka spark-kafka agents jdbc; do
  pom=jvm/$set/pom.xml
  h=$(fingerprint "$pom")
  dest=.cache/jars/$set
  if [[ -d "$dest" && "$(cat $stamps/jars-$set 2>/dev/null)" == "$h" ]]; then
    say "jars up to date ($dest)"
    continue
  fi
  say "fetching $set jars with Maven into $dest"
  rm -rf "$dest.tmp"
  log=.cache/mvn-$set.log
  # A stalled download otherwise waits out Maven's 30-minute read timeout; give up on it after two
  # minutes and try again (what was fetched stays in the local repository).
  fetched=0
  update=""
  for attempt in 1 2 3; do
    if mvn -B $update -Dstyle.color=never -Dmaven.wagon.rto=120000 -Dmaven.wagon.http.retryHandler.count=3 \
        -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$root/$dest.tmp" > "$log" 2>&1; then
      fetched=1
      break
    fi
    say "Maven attempt $attempt for the $set jars failed; retrying"
    update="-U"  # do not let Maven replay a failure it cached
  done
  if [[ $fetched -eq 0 ]]; then
    grep -E "ERROR|BUILD" "$log" | head -20 >&2
    echo "bootstrap: Maven could not fetch the $set jars (full log: $log). Check that Maven Central is" \
         "reachable, then run again." >&2
    exit 1
  fi
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  echo "$h" > $stamps/jars-$set
done

# The producer interceptor that keeps record timestamps for MirrorMaker tasks, compiled against the
# kafka-clients jar Spark's Kafka connector uses; the worker's SparkSession loads it from here.
clients_jar=$(ls .cache/jars/spark-kafka/kafka-clients-*.jar | head -1)
h=$(fingerprint jvm/interceptor/*.java <(basename "$clients_jar"))
dest=.cache/jars/interceptor
if [[ -f "$dest/sparklink-mirror-interceptor.jar" && "$(cat $stamps/interceptor 2>/dev/null)" == "$h" ]]; then
  say "interceptor jar up to date ($dest)"
else
  need javac "install OpenJDK 17, the JDK (apt-get install openjdk-17-jdk-headless)"
  need jar "install OpenJDK 17, the JDK (apt-get install openjdk-17-jdk-headless)"
  say "compiling the MirrorMaker producer interceptors (timestamps, offset syncs) into $dest"
  work=$(mktemp -d)
  javac --release 17 -cp "$clients_jar" -d "$work/classes" jvm/interceptor/*.java
  mkdir -p "$dest"
  jar --create --file "$dest/sparklink-mirror-interceptor.jar.tmp" -C "$work/classes" .
  mv "$dest/sparklink-mirror-interceptor.jar.tmp" "$dest/sparklink-mirror-interceptor.jar"
  rm -rf "$work"
  echo "$h" > $stamps/interceptor
fi

# The JDBC connector tests run a throwaway PostgreSQL server from Debian's package (as root: apt-get).
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; then
  say "postgresql up to date ($(ls -d /usr/lib/postgresql/*/ | head -1))"
else
  need apt-get "install PostgreSQL (initdb, pg_ctl) with your system's package manager"
  say "installing Debian's postgresql package"
  log=.cache/apt-postgresql.log
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql; } \
      > "$log" 2>&1; then
    tail -20 "$log" >&2
    echo "bootstrap: could not install postgresql (full log: $log)." >&2
    exit 1
  fi
fi

# The local Kubernetes API server (`sparklink k8s start`, the operator tests). SPARKLINK_SKIP_KUBE=1 skips
# the Go builds for a machine that only runs connectors (those tests then fail saying what to do).
if [[ "${SPARKLINK_SKIP_KUBE:-}" == 1 ]]; then
  say "skipping the Kubernetes binaries (SPARKLINK_SKIP_KUBE=1)"
else
  bash scripts/kube-binaries.sh
fi
