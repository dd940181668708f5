"""MirrorMaker 2 on Spark: MirrorSource, MirrorCheckpoint and MirrorHeartbeat connectors.

Records move JVM to JVM (Spark's Kafka source into Spark's Kafka writer); Python only orchestrates.
Names, record formats, source offsets and configs are MM2's (connect-mirror 4.3.1), so Apache
tools (RemoteClusterUtils, the console formatters) read what these connectors write.

Modules: policy (topic naming), formats (binary records), config (names, defaults, clients),
filters, offsets (source partitions and alterOffsets checks), admin (control-plane Kafka calls),
scheduler, interceptor (record timestamps), syncs (offset syncs and downstream offsets), source +
topics (remote topics),
sync_store + checkpoint_reader + checkpoint, heartbeat, maker (dedicated-mode properties).
"""

__all__ = ["checkpoint", "heartbeat", "source"]
