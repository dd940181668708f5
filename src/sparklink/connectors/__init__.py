"""Built-in connector plugins. Each module owns one connector and its task.

BUILTINS maps each plugin's aliases to its class path (`module:Class`); the plugin registry loads
them lazily, so listing a plugin does not import Spark or a database driver.
"""

BUILTINS: dict[str, tuple[str, ...]] = {
    "sparklink.connectors.datagen:DatagenConnector": ("datagen",),
}
