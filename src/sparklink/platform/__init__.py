"""Local infrastructure: JVM artifacts, local KRaft clusters, process supervision, free ports."""
