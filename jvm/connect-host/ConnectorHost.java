package io.sparklink.connect.host;

import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkConnectorContext;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.apache.kafka.connect.storage.OffsetStorageReaderImpl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * One running connector instance in the driver's JVM (Connect's WorkerConnector): initialize with a context,
 * start(config), taskConfigs(maxTasks) when the worker asks, stop(). Its context's
 * requestTaskReconfiguration() and raiseError(e) reach the worker through `events` ("reconfigure",
 * "error\n&lt;trace&gt;"); a source connector's OffsetStorageReader reads the offsets topic when first used.
 */
public final class ConnectorHost {
    private static final Logger log = LoggerFactory.getLogger(ConnectorHost.class);

    private final String name;
    private final Connector connector;
    private final String offsetsTopic;
    private final Map<String, Object> clients;
    private final Consumer<String> events;
    private final PluginMetrics metrics;
    private KafkaOffsets store;
    private OffsetStorageReaderImpl reader;

    ConnectorHost(String name, Connector connector, Map<String, String> config, String offsetsTopic,
                  Map<String, Object> clients, Consumer<String> events) {
        this.name = name;
        this.connector = connector;
        this.offsetsTopic = offsetsTopic;
        this.clients = clients;
        this.events = events;
        this.metrics = PluginMetricsSupport.forTask(name, null);
        try (Swap ignored = Swap.to(loader())) {
            connector.initialize(connector instanceof SinkConnector ? new SinkContext() : new SourceContext());
            connector.start(config);
        }
        log.info("connector {}: {} started", name, connector.getClass().getName());
    }

    private ClassLoader loader() {
        return connector.getClass().getClassLoader();
    }

    /** The task configs for at most `maxTasks` tasks, as JSON (the worker adds task.class and checks the count). */
    public String taskConfigs(int maxTasks) {
        try (Swap ignored = Swap.to(loader())) {
            List<Map<String, String>> configs = connector.taskConfigs(maxTasks);
            return Json.write(configs);
        }
    }

    public String taskClass() {
        try (Swap ignored = Swap.to(loader())) {
            return connector.taskClass().getName();
        }
    }

    public void stop() {
        try (Swap ignored = Swap.to(loader())) {
            connector.stop();
        } finally {
            synchronized (this) {
                if (reader != null) {
                    reader.close();
                    store.stop();
                }
            }
        }
    }

    private synchronized OffsetStorageReader offsets() {
        if (reader == null) {
            store = new KafkaOffsets(offsetsTopic, clients);
            store.start();
            JsonConverter keys = new JsonConverter();
            keys.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), true);
            JsonConverter values = new JsonConverter();
            values.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), false);
            reader = new OffsetStorageReaderImpl(store, name, keys, values);
        }
        return reader;
    }

    private abstract class BaseContext implements org.apache.kafka.connect.connector.ConnectorContext {
        @Override
        public void requestTaskReconfiguration() {
            events.accept("reconfigure");
        }

        @Override
        public void raiseError(Exception e) {
            events.accept("error\n" + Errors.trace(e));
        }

        @Override
        public PluginMetrics pluginMetrics() {
            return metrics;
        }
    }

    private final class SinkContext extends BaseContext implements SinkConnectorContext {
    }

    private final class SourceContext extends BaseContext implements SourceConnectorContext {
        @Override
        public OffsetStorageReader offsetStorageReader() {
            return offsets();
        }
    }
}
