"""Which file system the worker's Spark session uses for `file:`, and how a user's `spark.*` settings combine with the
session's own."""

from __future__ import annotations

from sparklink.worker.execution import spark


def settings(master: str, **extra: str) -> dict[str, str]:
    out = {"spark.master": master, **extra}
    spark._use_local_file_system(out)
    return out


def test_a_local_session_uses_the_nio_file_system_from_the_driver_class_path() -> None:
    local = settings("local[2]")
    assert local["spark.hadoop.fs.file.impl"] == spark.LOCAL_FILE_SYSTEM
    assert local["spark.driver.extraClassPath"].endswith("sparklink-localfs.jar")


def test_the_users_class_path_is_kept_and_their_file_system_is_not_replaced() -> None:
    assert settings("local[*]", **{"spark.driver.extraClassPath": "/opt/x.jar"})[
        "spark.driver.extraClassPath"
    ].startswith("/opt/x.jar:")
    theirs = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem"}
    assert settings("local[*]", **theirs) == {"spark.master": "local[*]", **theirs}


def test_a_cluster_session_keeps_hadoops_file_system() -> None:
    assert settings("spark://127.0.0.1:7077") == {"spark.master": "spark://127.0.0.1:7077"}


def test_a_workers_jvm_options_and_jars_are_added_to_the_sessions_own() -> None:
    own = spark.session_settings("local[2]")
    theirs = spark.session_settings(
        "local[2]",
        conf={
            "spark.driver.extraJavaOptions": "-XX:+HeapDumpOnOutOfMemoryError",
            "spark.jars": "/opt/extra.jar",
            "spark.sql.shuffle.partitions": "8",
        },
    )
    options = theirs["spark.driver.extraJavaOptions"]
    assert options.startswith(own["spark.driver.extraJavaOptions"])  # the log4j file and GC are kept
    assert options.endswith(" -XX:+HeapDumpOnOutOfMemoryError")  # last, so the user's flag wins
    assert theirs["spark.jars"] == own["spark.jars"] + ",/opt/extra.jar"  # the Kafka connector stays
    assert theirs["spark.sql.shuffle.partitions"] == "8"  # any other setting is replaced


def test_an_empty_list_setting_adds_nothing() -> None:
    own = spark.session_settings("local[2]")
    blank = spark.session_settings("local[2]", conf={"spark.jars": " ", "spark.driver.extraJavaOptions": ""})
    assert blank["spark.jars"] == own["spark.jars"]
    assert blank["spark.driver.extraJavaOptions"] == own["spark.driver.extraJavaOptions"]
