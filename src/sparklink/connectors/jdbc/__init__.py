"""JDBC connectors for PostgreSQL: `jdbc-sink` (upsert/insert from Kafka) and `jdbc-source` (poll tables).

Records move through Spark's JDBC writer in the JVM (sink) or a Python Data Source reading with psycopg
(source, since a streaming reader cannot call Spark); psycopg also runs the few control statements
(DDL, the upsert merge, offset queries). Neither module imports psycopg or Spark at import time.
"""
