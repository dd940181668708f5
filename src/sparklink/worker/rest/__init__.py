"""The Kafka Connect REST API over the herder (FastAPI)."""
