package io.sparklink.connect.host;

import org.apache.kafka.common.utils.AppInfoParser;

import java.net.URLClassLoader;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The Connect host of one JVM (the Spark driver, or an executor), made by the bridge's HostLoader inside the
 * isolated loader that holds Connect's runtime. Everything it offers takes and returns JDK types only (JSON
 * text, functional interfaces), since its callers - Python over Py4J on the driver, the bridge's Spark
 * function on an executor - see none of Connect's classes.
 *
 * <p>The plugins of a plugin.path are scanned once per JVM and shared by every worker and task in it.
 */
public final class Host {
    private static final long PREVIOUS_RUN_WAIT_MS = 120_000;

    private final Map<String, PluginSet> sets = new ConcurrentHashMap<>();
    private final java.util.Set<String> running = new java.util.HashSet<>();

    public Host() {
    }

    /** The plugins of a plugin.path (comma-separated locations, as Connect reads it), scanned once. */
    public PluginSet pluginSet(String pluginPath, String discovery) {
        return sets.computeIfAbsent(discovery + "\n" + pluginPath,
                key -> new PluginSet(pluginPath, discovery, (URLClassLoader) Host.class.getClassLoader()));
    }

    /** The driver's calls on the plugins of a plugin.path: listing, configs, validation, connector instances. */
    public PluginCalls plugins(String pluginPath, String discovery) {
        return new PluginCalls(pluginSet(pluginPath, discovery));
    }

    /** The version of the Kafka clients and Connect runtime the host runs. */
    public String kafkaVersion() {
        return AppInfoParser.getVersion();
    }

    /**
     * Run a source task until `stop` says to stop (on an executor, inside a Spark task): null once it stopped
     * cleanly, else the trace of what failed it. `events` hears "started" and "topic:&lt;name&gt;" as records
     * land.
     */
    public String runSourceTask(String specJson, BooleanSupplier stop, Consumer<String> events) {
        TaskSpec spec = new TaskSpec(specJson);
        String key = spec.connector + "\n" + spec.task;
        try {
            claim(key);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (RuntimeException e) {
            return Errors.trace(e);
        }
        try {
            new SourceTaskRunner(spec, pluginSet(spec.pluginPath, spec.discovery), stop, events).run();
            return null;
        } catch (Throwable t) {
            return Errors.trace(t);
        } finally {
            release(key);
        }
    }

    /** One run of a task at a time in this JVM: a new run waits for the previous one's last offset commit. */
    private synchronized void claim(String key) throws InterruptedException {
        long deadline = System.currentTimeMillis() + PREVIOUS_RUN_WAIT_MS;
        while (running.contains(key)) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                throw new IllegalStateException("the previous run of task " + key.replace('\n', '-')
                        + " is still running in this JVM after " + PREVIOUS_RUN_WAIT_MS / 1000 + "s");
            }
            wait(left);
        }
        running.add(key);
    }

    private synchronized void release(String key) {
        running.remove(key);
        notifyAll();
    }

    /** A sink task for a run on the driver: it takes each micro-batch of records read by Spark's Kafka source. */
    public SinkTaskHost sinkTask(String specJson) {
        TaskSpec spec = new TaskSpec(specJson);
        // Its clients (the dead letter queue's producer) are made here: with the host's loader as context loader.
        try (Swap ignored = Swap.to(Host.class.getClassLoader())) {
            return new SinkTaskHost(spec, pluginSet(spec.pluginPath, spec.discovery));
        }
    }
}
