package io.sparklink.connect.host;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What the worker (Python, over Py4J, on the driver) asks of the plugins of its plugin.path: the listing, each
 * plugin's ConfigDef, a connector's own validation, running connector instances (ConnectorHost),
 * alterOffsets (KIP-875) and exactlyOnceSupport. Configs and answers cross as JSON; a plugin's own exception
 * reaches the caller as a Py4J error that carries its Java trace.
 */
public final class PluginCalls {
    private final PluginSet plugins;

    PluginCalls(PluginSet plugins) {
        this.plugins = plugins;
    }

    public String describe() {
        return plugins.describe();
    }

    /** Why a connector.plugin.version cannot run the connector class, or "" (PluginSet#versionProblem). */
    public String versionProblem(String className, String version) {
        String problem = plugins.versionProblem(className, version);
        return problem == null ? "" : problem;
    }

    /** The plugin's own ConfigDef keys (Connect's ConfigKeyInfo fields), for any of the listed plugin types. */
    public String configDef(String className) throws ClassNotFoundException {
        Object plugin = plugins.newInstance(plugins.pluginClass(className));
        ConfigDef def;
        try (Swap ignored = Swap.to(plugin.getClass().getClassLoader())) {
            if (plugin instanceof Connector connector) {
                def = connector.config();
            } else if (plugin instanceof Converter converter) {
                def = converter.config();
            } else if (plugin instanceof HeaderConverter converter) {
                def = converter.config();
            } else if (plugin instanceof Transformation<?> transformation) {
                def = transformation.config();
            } else if (plugin instanceof Predicate<?> predicate) {
                def = predicate.config();
            } else {
                throw new ConnectException(className + " is not a connector, converter, transformation or predicate");
            }
        }
        return Json.write(ConfigJson.keys(def == null ? new ConfigDef() : def));
    }

    /** The connector's own validate(config): per key of its ConfigDef, value, recommendations, errors, visibility. */
    public String validate(String className, String configJson) throws ClassNotFoundException {
        Connector connector = newConnector(className);
        Map<String, String> config = Json.strings(configJson);
        try (Swap ignored = Swap.to(connector.getClass().getClassLoader())) {
            ConfigDef def = connector.config();
            Config result = connector.validate(config);
            return Json.write(ConfigJson.values(def == null ? new ConfigDef() : def, result));
        }
    }

    /** "source" or "sink", the task class and the version of a connector class. */
    public String connectorInfo(String className) throws ClassNotFoundException {
        Connector connector = newConnector(className);
        try (Swap ignored = Swap.to(connector.getClass().getClassLoader())) {
            Map<String, Object> out = new HashMap<>();
            out.put("type", connector instanceof SinkConnector ? "sink" : "source");
            out.put("taskClass", connector.taskClass().getName());
            out.put("version", connector.version());
            out.put("taskVersion", taskVersion(connector));
            return Json.write(out);
        }
    }

    private String taskVersion(Connector connector) {
        try {
            return plugins.newInstance(connector.taskClass()).version();
        } catch (RuntimeException | LinkageError e) {
            return connector.version();
        }
    }

    /** Start a connector instance: initialize with its context, then start(config); throws what start throws. */
    public ConnectorHost startConnector(String name, String className, String configJson, String offsetsTopic,
                                        String clientsJson, Consumer<String> events) throws ClassNotFoundException {
        Connector connector = newConnector(className);
        Map<String, Object> clients = Json.object(clientsJson);
        return new ConnectorHost(name, connector, Json.strings(configJson), offsetsTopic, clients, events);
    }

    /**
     * KIP-875: ask the connector about an offsets change; "true" if it applied it itself. Source offsets arrive
     * as [{"partition": {...}, "offset": {...}|null}], sink offsets as [{"topic", "partition", "offset"|null}].
     */
    public String alterOffsets(String className, String configJson, String offsetsJson) throws ClassNotFoundException {
        Connector connector = newConnector(className);
        Map<String, String> config = Json.strings(configJson);
        List<Map<String, Object>> entries = Json.objects(offsetsJson);
        try (Swap ignored = Swap.to(connector.getClass().getClassLoader())) {
            if (connector instanceof SinkConnector sink) {
                Map<TopicPartition, Long> offsets = new HashMap<>();
                for (Map<String, Object> entry : entries) {
                    Object offset = entry.get("offset");
                    offsets.put(new TopicPartition((String) entry.get("topic"), ((Number) entry.get("partition")).intValue()),
                            offset == null ? null : ((Number) offset).longValue());
                }
                return String.valueOf(sink.alterOffsets(config, offsets));
            }
            Map<Map<String, ?>, Map<String, ?>> offsets = new HashMap<>();
            for (Map<String, Object> entry : entries) {
                @SuppressWarnings("unchecked")
                Map<String, ?> partition = (Map<String, ?>) entry.get("partition");
                @SuppressWarnings("unchecked")
                Map<String, ?> offset = (Map<String, ?>) entry.get("offset");
                offsets.put(partition, offset);
            }
            return String.valueOf(((SourceConnector) connector).alterOffsets(config, offsets));
        }
    }

    /** SourceConnector#exactlyOnceSupport for a config: SUPPORTED, UNSUPPORTED, or "" when it cannot say. */
    public String exactlyOnceSupport(String className, String configJson) throws ClassNotFoundException {
        Connector connector = newConnector(className);
        if (!(connector instanceof SourceConnector source)) {
            return "";
        }
        try (Swap ignored = Swap.to(connector.getClass().getClassLoader())) {
            ExactlyOnceSupport support = source.exactlyOnceSupport(Json.strings(configJson));
            return support == null ? "" : support.name();
        }
    }

    private Connector newConnector(String className) throws ClassNotFoundException {
        Class<?> klass = plugins.pluginClass(className);
        if (!Connector.class.isAssignableFrom(klass)) {
            throw new ConnectException(className + " is not a connector");
        }
        return (Connector) plugins.newInstance(klass);
    }
}
