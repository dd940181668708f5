#!/usr/bin/env bash
# Idempotent set-up for sparklink, run by `make demo` and `make test`:
#   1. a virtualenv in .venv with the pinned Python dependencies and sparklink itself (editable);
#   2. the JVM jars from Maven Central into .cache/jars/<set>, one set per pom under jvm/;
#   3. our own Java, compiled with javac: the MirrorMaker producer interceptors (jvm/interceptor) and the file
#      sink's Spark line writer (jvm/lines), in .cache/jars/interceptor and .cache/jars/lines;
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

# build_jar <name> <jar file> <classpath> <what, for the log> <sources...>: compile our own Java into a jar in
# .cache/jars/<name>, again only when the sources or the jars they compile against change.
build_jar() {
  local name=$1 jar=$2 classpath=$3 what=$4; shift 4
  local h dest=.cache/jars/$name work
  h=$(fingerprint "$@" <(printf '%s\n' "$classpath" | tr ':' '\n' | xargs -r -n1 basename))
  if [[ -f "$dest/$jar" && "$(cat $stamps/$name 2>/dev/null)" == "$h" ]]; then
    say "$name jar up to date ($dest)"
    return
  fi
  need javac "install OpenJDK 17, the JDK (apt-get install openjdk-17-jdk-headless)"
  need jar "install OpenJDK 17, the JDK (apt-get install openjdk-17-jdk-headless)"
  say "compiling $what into $dest"
  work=$(mktemp -d)
  javac --release 17 -nowarn -cp "$classpath" -d "$work/classes" "$@"
  mkdir -p "$dest"
  jar --create --file "$dest/$jar.tmp" -C "$work/classes" .
  mv "$dest/$jar.tmp" "$dest/$jar"
  rm -rf "$work"
  echo "$h" > $stamps/$name
}

# The producer interceptors that keep record timestamps, emit offset syncs and measure MirrorMaker 2's
# metrics for MirrorMaker tasks, and the JMX reader /metrics uses (the Spark JVM's Kafka clients, memory,
# threads and GC), compiled against the kafka-clients jar Spark's Kafka connector uses; the worker's
# SparkSession loads it.
clients_jar=$(ls .cache/jars/spark-kafka/kafka-clients-*.jar | head -1)
build_jar interceptor sparklink-mirror-interceptor.jar "$clients_jar" \
  "the MirrorMaker producer interceptors (timestamps, offset syncs, metrics) and the JMX reader" jvm/interceptor/*.java

# The file sink's line writer (a Spark batch writer), compiled against the installed PySpark's jars.
pyspark_jars=$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
build_jar lines sparklink-lines.jar "$(find "$pyspark_jars" -name "*.jar" -xtype f | sort | paste -sd:)" \
  "the file sink's Spark line writer" jvm/lines/*.java
# SQL functions of our own (sparklink_utf8_text), compiled against the same jars.
build_jar sql sparklink-sql.jar "$(find "$pyspark_jars" -name "spark-sql-api_*.jar" -xtype f | sort | paste -sd:)" \
  "the worker's Spark SQL functions" jvm/sql/*.java
# Hadoop's local file system without a chmod process per file created (the Spark driver's `file:`).
build_jar localfs sparklink-localfs.jar "$(find "$pyspark_jars" -name "hadoop-client-api-*.jar" -xtype f | sort | paste -sd:)" \
  "the local file system for Spark's checkpoints" jvm/localfs/*.java

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

# The REST security tests drive Debian's headless Chromium with Playwright (executable_path, so Playwright
# downloads no browser of its own): a page on another origin must not be able to create a connector.
if [[ -x /usr/bin/chromium ]]; then
  say "chromium up to date ($(/usr/bin/chromium --version 2>/dev/null | head -1))"
else
  need apt-get "install Chromium (/usr/bin/chromium) with your system's package manager"
  say "installing Debian's chromium package"
  log=.cache/apt-chromium.log
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; } \
      > "$log" 2>&1; then
    tail -20 "$log" >&2
    echo "bootstrap: could not install chromium (full log: $log)." >&2
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
