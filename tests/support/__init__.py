"""Test and benchmark support: Kafka clusters for fixtures, and Apache's Connect and MirrorMaker 2 as reference peers.

Importable by `bench/` too; nothing here ships in the sparklink package.
"""
