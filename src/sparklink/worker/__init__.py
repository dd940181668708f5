"""The Connect worker process: what `sparklink worker` (and `sparklink mirror-maker`) runs.

`assembly` builds one from its `config`: the stores on the group's internal topics (`storage`), the
Spark session and the task queries (`execution`), the herder that decides (`herder`) and the REST API
in front of it (`rest`); `plugins` finds the connector plugins and `transforms` compiles converters,
SMTs and error handling to Spark SQL for the running tasks and for validation.
"""
