package io.sparklink.connect.host;

import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;

import java.util.LinkedHashMap;
import java.util.Map;

/** The PluginMetrics (KIP-877) that connector and task contexts hand plugins, on one metrics registry per JVM. */
final class PluginMetricsSupport {
    private static final Metrics METRICS = new Metrics();

    private PluginMetricsSupport() {
    }

    static PluginMetrics forTask(String connector, Integer task) {
        Map<String, String> tags = new LinkedHashMap<>();
        tags.put("connector", connector);
        if (task != null) {
            tags.put("task", String.valueOf(task));
        }
        return new PluginMetricsImpl(METRICS, tags);
    }
}
