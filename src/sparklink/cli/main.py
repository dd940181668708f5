"""`sparklink`: run a worker, a local Kafka, the demo, and drive connectors through a worker's REST API."""

from __future__ import annotations

import typer

from sparklink.cli import agent, connectors, demo, k8s, kafka, mirror_maker, operator, worker

app = typer.Typer(
    help="sparklink: a Kafka Connect-compatible connector runtime whose pipelines run on Apache Spark.\n\n"
    "Start with `sparklink demo`, or `sparklink kafka start` then `sparklink worker`.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
app.command("worker")(worker.run_worker)
app.command("demo")(demo.run_demo)
app.command("mirror-maker")(mirror_maker.run_mirror_maker)
app.command("agent")(agent.run_agent)
app.add_typer(kafka.app, name="kafka")
app.add_typer(connectors.app, name="connectors")
app.add_typer(operator.app, name="operator")
app.add_typer(k8s.app, name="k8s")


if __name__ == "__main__":
    app()
