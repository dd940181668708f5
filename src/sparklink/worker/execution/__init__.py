"""Running tasks: one Spark Structured Streaming query per task, on one SparkSession per worker."""
