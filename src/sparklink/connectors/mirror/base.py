"""MirrorConnector: what MM2's three connectors (source, checkpoint, heartbeat) share.

Each names its ConfigDef in `DEFINITION` and what its `alterOffsets` accepts in `OFFSETS`. Every
`validate` adds, to the ConfigDef's errors, the client settings no Kafka client could use
(`config.client_errors`), as MM2's connectors all check their clients' configs; subclasses extend it with
their own rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from sparklink.api.config import ConfigDef
from sparklink.api.connector import Offset, Partition, SourceConnector
from sparklink.connectors.mirror import offsets
from sparklink.connectors.mirror.config import client_errors


class MirrorConnector(SourceConnector):
    DEFINITION: ClassVar[ConfigDef]
    OFFSETS: ClassVar[offsets.Rules]

    @classmethod
    def config_def(cls) -> ConfigDef:
        return cls.DEFINITION

    def validate(self, config: Mapping[str, str]) -> dict[str, list[str]]:
        errors = super().validate(config)
        for key, problems in client_errors(config).items():
            errors.setdefault(key, []).extend(problems)
        return errors

    def alter_offsets(self, config: Mapping[str, str], offsets_: list[tuple[Partition, Offset | None]]) -> bool:
        return self.OFFSETS.validate(offsets_)
