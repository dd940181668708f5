"""sparklink: a Kafka Connect-compatible connector runtime whose pipelines run on Apache Spark."""

__version__ = "0.1.0"
