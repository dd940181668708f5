#!/usr/bin/env bash
# fetch-jars.sh <set>...: copies the runtime jars of jvm/<set>/pom.xml from Maven Central into .cache/jars/<set>.
# Called by scripts/bootstrap.sh (the sets every command needs) and scripts/test-deps.sh (the reference
# Apache peers of the tests). A set whose pom is unchanged since its last fetch (stamp) is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stamps=.cache/stamps
mkdir -p "$stamps"

say() { printf '\033[1;34m[bootstrap]\033[0m %s\n' "$*"; }
fingerprint() { cat "$@" | sha256sum | cut -d' ' -f1; }

# The Kafka version is set once, in jvm/kafka/pom.xml; the poms that only use it (connect, plugins) get it from there.
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/kafka/pom.xml | head -1)

for set in "$@"; do
  pom=jvm/$set/pom.xml
  inputs=("$pom")
  version_flag=()
  if grep -q '<version>${kafka.version}</version>' "$pom" && ! grep -q '<kafka.version>' "$pom"; then
    # Only for a pom without a version of its own: -D would override the reference peers' pinned version.
    inputs+=(jvm/kafka/pom.xml)
    version_flag=(-Dkafka.version="$kafka_version")
  fi
  h=$(fingerprint "${inputs[@]}")
  dest=.cache/jars/$set
  # Plugins go to a plugin.path directory of their own: a directory per plugin, as Connect lays them out.
  [[ $set == plugins ]] && dest=.cache/plugins
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
        ${version_flag[@]+"${version_flag[@]}"} -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
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
  if [[ $set == plugins ]]; then
    # As a user installs them: a plugin archive unpacked into plugin.path, a single jar in a directory of its own.
    for archive in "$dest.tmp"/*.tar.gz; do
      tar -xzf "$archive" -C "$dest.tmp" && rm "$archive"
    done
    for jar in "$dest.tmp"/*.jar; do
      name=$(basename "$jar" .jar); name=${name%-[0-9]*}
      mkdir -p "$dest.tmp/$name" && mv "$jar" "$dest.tmp/$name/"
    done
  fi
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  echo "$h" > $stamps/jars-$set
done
