#!/usr/bin/env bash
# `make test`'s pytest step: the pure unit tests (tests/unit: in-memory twins, no Kafka, Spark or API server)
# run in a second pytest process beside the rest of the suite. The integration tests spend most of their wall
# time waiting on JVMs and conditions, which leaves room on a 2-core machine for the unit tests' few minutes of
# Python. Both results are printed, the unit tests' after the main run's (whose --durations list is the
# integration tests'); either failing fails the step.
# Usage: scripts/run-tests.sh [pytest args for the main run...]   (`make test` passes $(PYTEST_ARGS))
# SPARKLINK_SERIAL_TESTS=1 runs everything in one process, as before.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
UNIT=tests/unit

if [[ -n "${SPARKLINK_SERIAL_TESTS:-}" ]]; then
  exec "$PY" -m pytest "$@"
fi

# Named test paths mean the caller chose what to run: run just that, in one process.
for arg in "$@"; do
  if [[ "$arg" == tests* ]]; then
    exec "$PY" -m pytest "$@"
  fi
done

unit_log=$(mktemp -t sparklink-unit-tests.XXXXXX)
"$PY" -m pytest -q -p no:cacheprovider "$UNIT" >"$unit_log" 2>&1 &
unit_pid=$!
# Stopped with the main run (Ctrl-C, CI cancel), the unit process does not outlive it.
trap 'kill "$unit_pid" 2>/dev/null; rm -f "$unit_log"' EXIT

"$PY" -m pytest --ignore="$UNIT" "$@"
main_status=$?
wait "$unit_pid"
unit_status=$?

echo
echo "==================== $UNIT (run beside the suite above; exit $unit_status) ===================="
cat "$unit_log"
if ((main_status != 0 || unit_status != 0)); then
  echo "make test: the suite exited $main_status, $UNIT exited $unit_status" >&2
  exit $((main_status != 0 ? main_status : unit_status))
fi
