"""Connect's converters, single message transforms, predicates and error handling, plus sparklink's SQL
transform, compiled to Spark SQL expressions. Caller: the worker (`compile_pipeline` per task, then
`Pipeline.run` per micro-batch), herder validation and `/connector-plugins` (`catalog`,
`connector_config`).

Modules: `exprs` (SQL text helpers), `record` (a record as expressions), `schemas` (Connect schemas),
`converters`, `smt/*` (transforms), `predicates`, `errors` (tolerance, DLQ, retries), `frames` and
`sql_step` (how steps pass columns), `pipeline` (compiling a config), `catalog` and
`connector_config` (plugin lookup and config validation).
"""
