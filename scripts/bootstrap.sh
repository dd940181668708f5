#!/usr/bin/env bash
# Idempotent set-up of what every sparklink command runs on, run by `make demo`, `make lint` and `make test`:
#   1. a virtualenv in .venv with the pinned Python dependencies and sparklink itself (editable);
#   2. the JVM jars from Maven Central into .cache/jars/<set>, one set per pom under jvm/;
#   3. our own Java, compiled with javac: the MirrorMaker producer interceptors (jvm/interceptor), the file
#      sink's Spark line writer (jvm/lines), the SQL functions (jvm/sql), the local file system (jvm/localfs)
#      and the Connect host that runs Java plugins from plugin.path (jvm/connect-bridge, jvm/connect-host) over
#      Connect's runtime (jvm/connect, .cache/jars/connect);
#   4. the Spark and Kafka JVMs' class-data-sharing archives (.cache/class-archive), trained once per JDK and jars.
# What only the tests need is not here: scripts/test-deps.sh (called by `make test`) installs Debian's
# PostgreSQL, fetches the Connect plugins the tests run (jvm/plugins, .cache/plugins) and builds the
# Kubernetes binaries (scripts/kube-binaries.sh), and `sparklink k8s start` builds those binaries itself the first time if they are missing.
# Each step is skipped when a stamp holding the hash of its inputs matches, so a second run takes
# seconds and downloads nothing. Delete .venv or .cache to force a rebuild.
set -euo pipefail
cd "$(dirname "$0")/.."
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

# Each phase's seconds, for the closing line: a first run says where its time went.
phase_start=$SECONDS
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

t_python=$((SECONDS - phase_start)); phase_start=$SECONDS
bash scripts/fetch-jars.sh kafka spark-kafka agents jdbc connect

t_jars=$((SECONDS - phase_start)); phase_start=$SECONDS

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
# metrics for MirrorMaker tasks, the JMX reader /metrics uses (the Spark JVM's Kafka clients, memory,
# threads and GC) and the TLS cipher warm-up of those clients, compiled against the kafka-clients jar
# Spark's Kafka connector uses; the worker's SparkSession loads it.
clients_jar=$(ls .cache/jars/spark-kafka/kafka-clients-*.jar | head -1)
build_jar interceptor sparklink-mirror-interceptor.jar "$clients_jar" \
  "the MirrorMaker producer interceptors (timestamps, offset syncs, metrics), the JMX reader and the TLS warm-up" jvm/interceptor/*.java

# The file sink's line writer (a Spark batch writer), compiled against the installed PySpark's jars.
pyspark_jars=$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
build_jar lines sparklink-lines.jar "$(find "$pyspark_jars" -name "*.jar" -xtype f | sort | paste -sd:)" \
  "the file sink's Spark line writer" jvm/lines/*.java
# SQL functions of our own (sparklink_utf8_text, _json_variant, _variant_text and the _object_* ones that
# transforms read and edit JSON objects with) and the plan swap that reuses a pipeline's analysed plans on
# each micro-batch, compiled against the same jars (Scala's library for the Seq a Java UDF receives an SQL
# array as, and its reflection for the overloads of Spark's `functions.udf`; Spark's catalyst and classic
# Dataset for the plans).
build_jar sql sparklink-sql.jar "$(find "$pyspark_jars" \( -name "spark-sql-api_*.jar" -o -name "spark-variant_*.jar" \
  -o -name "spark-unsafe_*.jar" -o -name "jackson-core-*.jar" -o -name "scala-library-*.jar" -o -name "scala-reflect-*.jar" \
  -o -name "spark-catalyst_*.jar" -o -name "spark-sql_*.jar" -o -name "spark-core_*.jar" -o -name "spark-common-utils_*.jar" \) \
  -xtype f | sort | paste -sd:)" "the worker's Spark SQL functions and plan swap" jvm/sql/*.java
# Hadoop's local file system without a chmod process per file created (the Spark driver's `file:`).
build_jar localfs sparklink-localfs.jar "$(find "$pyspark_jars" -name "hadoop-client-api-*.jar" -xtype f | sort | paste -sd:)" \
  "the local file system for Spark's checkpoints" jvm/localfs/*.java

# The Connect host: Java plugins from plugin.path run in the Spark JVMs inside an isolated class loader that holds
# Connect's runtime (.cache/jars/connect) and this host code; the bridge, on Spark's class path, reaches it.
build_jar connect-bridge sparklink-connect-bridge.jar "$(find "$pyspark_jars" -name "*.jar" -xtype f | sort | paste -sd:)" \
  "the Connect host's bridge to Spark" jvm/connect-bridge/*.java
build_jar connect-host sparklink-connect-host.jar "$(ls .cache/jars/connect/*.jar | sort | paste -sd:)" \
  "the Connect host (Java plugins from plugin.path)" jvm/connect-host/*.java
t_javac=$((SECONDS - phase_start)); phase_start=$SECONDS

# The Spark JVM's class-data-sharing archive (.cache/class-archive): a training JVM records the classes it
# loads, and every worker's JVM then maps them instead of reading and verifying them (about 3 s sooner
# healthy). Its file name holds what it depends on (the JDK, PySpark, the jars above), so it is trained
# again only when one of them changes; it never fails the bootstrap.
.venv/bin/python -m sparklink.worker.execution.class_archive 2>/dev/null | while read -r line; do say "$line"; done || true
# The same for the JVMs of local Kafka clusters (brokers, controllers, the storage tool): a node starts
# about 1 s sooner, and a cluster of six in half the time.
.venv/bin/python -m sparklink.platform.kafka_class_archive 2>/dev/null | while read -r line; do say "$line"; done || true
t_archive=$((SECONDS - phase_start))
say "ready in ${SECONDS}s (.venv ${t_python}s, jars ${t_jars}s, javac ${t_javac}s, class archive ${t_archive}s)"
