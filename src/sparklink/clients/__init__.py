"""Kafka client settings: the one place every Kafka client sparklink makes takes its settings from.

`settings` builds them (the worker's stores and group, the tasks' Spark readers and writers, MirrorMaker 2's
control plane, the roller, the CLI); `watermarks` reads how many records a topic holds. The package imports
nothing else of sparklink, so the SPI's plugins, the worker, the operator's brokers and the roller share it.
"""
