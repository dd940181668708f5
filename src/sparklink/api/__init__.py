"""The plugin SPI: what a connector author implements. Importable without pyspark, fastapi or the runtime.

from sparklink.api import config, connector
class MySource(connector.SourceConnector): ...
"""

from sparklink.api import config, connector, direct, errors, files, text

__all__ = ["config", "connector", "direct", "errors", "files", "text"]
