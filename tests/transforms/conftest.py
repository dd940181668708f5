"""The transform tests run tiny batches through many different plans: Spark's interpreted expression
evaluation is faster there than compiling code for each plan (the integration tests run compiled)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


@pytest.fixture(scope="module", autouse=True)
def interpreted(spark: Any) -> Iterator[None]:
    previous = {k: spark.conf.get(k) for k in INTERPRETED}
    for key, value in INTERPRETED.items():
        spark.conf.set(key, value)
    yield
    for key, value in previous.items():
        spark.conf.set(key, value)
