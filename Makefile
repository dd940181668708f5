# The two set-up commands. Both bootstrap what they need (idempotent; a second run downloads and builds nothing).
#   make demo   # local Kafka + worker + datagen connector; DURATION=<seconds> bounds it
#   make test   # lint, type-check and the test suite against a real Kafka broker and real Spark
# `bootstrap` is what every command runs on (.venv, the Maven jars, our javac builds); `test-deps` adds what
# only the tests need (Debian's PostgreSQL, the Kubernetes binaries built from Go), after lint and type checks
# (the Go builds start at the beginning of `make test`).
.PHONY: demo test test-steps bootstrap test-deps lint typecheck bench clean

PY := .venv/bin/python

bootstrap:
	@bash scripts/bootstrap.sh

test-deps: bootstrap
	@bash scripts/test-deps.sh

demo: bootstrap
	@$(PY) -m sparklink.cli.main demo $(if $(DURATION),--duration $(DURATION),)

lint: bootstrap
	@.venv/bin/ruff check src tests bench
	@.venv/bin/ruff format --check src tests bench
	@.venv/bin/lint-imports --no-cache

typecheck: bootstrap
	@.venv/bin/mypy

# The Go builds of test-deps start first, beside every step (scripts/beside-kube-builds.sh): on a fresh machine
# they take longest. tests/unit runs in a second pytest process beside the rest (scripts/run-tests.sh;
# SPARKLINK_SERIAL_TESTS=1: one).
test:
	@bash scripts/beside-kube-builds.sh $(MAKE) --no-print-directory test-steps

test-steps: bootstrap lint typecheck test-deps
	@bash scripts/run-tests.sh $(PYTEST_ARGS)

bench: bootstrap
	@$(PY) -m bench.rest_and_restart

clean:
	rm -rf .venv .cache .state
