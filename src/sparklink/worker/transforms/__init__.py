"""Connect's converters, single message transforms, predicates and error handling, plus sparklink's SQL
transform, compiled to Spark SQL expressions. Caller: the worker (`compile_pipeline` per task, then
`Pipeline.run` per micro-batch), herder validation and `/connector-plugins` (`catalog`, `enrichment`).

Modules: `exprs` (SQL text helpers), `record` (a record as expressions), `schemas` (Connect schemas),
`converters`, `smt/*` (transforms), `predicates`, `errors` (tolerance, DLQ, retries), `frames` and
`sql_step` (how steps pass columns), `pipeline` (compiling a config), `catalog` (plugin lookup) and
`enrichment` (the per-alias keys and checks added to `sparklink.worker.connector_config`, where the
connector-level keys are declared).
"""
