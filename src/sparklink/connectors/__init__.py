"""Built-in connector plugins. Each module owns one connector and its task."""
