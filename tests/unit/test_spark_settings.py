"""Which file system the worker's Spark session uses for `file:`, and that a user's choice wins."""

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
