"""Built-in connector plugins. Each module owns one connector family and its tasks.

BUILTINS maps each plugin's aliases to its class path (`module:Class`); the plugin registry loads
them lazily, so listing a plugin does not import Spark or a database driver. Apache Kafka's class
names are aliases of their sparklink twins, so configs written for Kafka Connect work unchanged.
"""

BUILTINS: dict[str, tuple[str, ...]] = {
    "sparklink.connectors.datagen:DatagenConnector": ("datagen",),
    "sparklink.connectors.file:FileStreamSourceConnector": (
        "file-source",
        "FileStreamSource",
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
    ),
    "sparklink.connectors.file:FileStreamSinkConnector": (
        "file-sink",
        "FileStreamSink",
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
    ),
    "sparklink.connectors.lake:ParquetSinkConnector": ("lake-sink",),
    "sparklink.connectors.jdbc.sink:JdbcSinkConnector": ("jdbc-sink",),
    "sparklink.connectors.jdbc.source:JdbcSourceConnector": ("jdbc-source",),
    "sparklink.connectors.mirror.source:MirrorSourceConnector": (
        "mirror-source",
        "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    ),
    "sparklink.connectors.mirror.checkpoint:MirrorCheckpointConnector": (
        "mirror-checkpoint",
        "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    ),
    "sparklink.connectors.mirror.heartbeat:MirrorHeartbeatConnector": (
        "mirror-heartbeat",
        "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
    ),
}
