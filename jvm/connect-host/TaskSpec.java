package io.sparklink.connect.host;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a Java task run is started with, as JSON from the worker: who it is, its configs, where its plugins
 * are, the offsets topic and the Kafka client settings (from sparklink.clients, the one place they are made).
 */
final class TaskSpec {
    final String connector;
    final int task;
    final String connectorClass;
    final String taskClass;
    final Map<String, String> taskConfig;
    final Map<String, String> connectorConfig;
    final Map<String, String> workerConverters;
    final String pluginPath;
    final String discovery;
    final String offsetsTopic;
    final Map<String, Object> clients;
    final long offsetFlushMs;
    final long offsetCommitTimeoutMs;
    final long stopGraceMs;

    @SuppressWarnings("unchecked")
    TaskSpec(String json) {
        Map<String, Object> raw = Json.object(json);
        connector = (String) raw.get("connector");
        task = ((Number) raw.get("task")).intValue();
        connectorClass = (String) raw.get("connectorClass");
        taskClass = (String) raw.get("taskClass");
        taskConfig = strings((Map<String, Object>) raw.get("taskConfig"));
        connectorConfig = strings((Map<String, Object>) raw.get("connectorConfig"));
        workerConverters = strings((Map<String, Object>) raw.getOrDefault("workerConverters", Map.of()));
        pluginPath = (String) raw.get("pluginPath");
        discovery = (String) raw.getOrDefault("discovery", "hybrid_warn");
        offsetsTopic = (String) raw.get("offsetsTopic");
        clients = new LinkedHashMap<>((Map<String, Object>) raw.get("clients"));
        offsetFlushMs = ((Number) raw.getOrDefault("offsetFlushMs", 5000)).longValue();
        offsetCommitTimeoutMs = ((Number) raw.getOrDefault("offsetCommitTimeoutMs", 5000)).longValue();
        stopGraceMs = ((Number) raw.getOrDefault("stopGraceMs", 5000)).longValue();
    }

    private static Map<String, String> strings(Map<String, Object> raw) {
        Map<String, String> out = new LinkedHashMap<>();
        if (raw != null) {
            raw.forEach((k, v) -> out.put(k, v == null ? null : String.valueOf(v)));
        }
        return out;
    }
}
