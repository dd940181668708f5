package io.sparklink.metrics;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.lang.management.ThreadMXBean;
import java.util.Set;

import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * What the Spark JVM of a sparklink worker publishes over JMX, read in one call from Python when the
 * worker's {@code /metrics} is scraped (nothing runs between scrapes).
 *
 * <p>The Kafka clients Spark runs for the tasks (its Kafka source's consumers and admin client, its
 * Kafka sink's producers) register their metrics as MBeans, exactly as they do in a Connect worker,
 * where the JMX exporter reads them; {@link #kafkaClients} lists their numeric attributes. {@link #jvm}
 * gives the JVM's memory, threads and garbage collections, which the exporter adds on a Connect pod.
 */
public final class JmxSnapshot {
    private static final String[] CLIENT_DOMAINS = {"kafka.consumer", "kafka.producer", "kafka.admin.client"};

    private JmxSnapshot() {
    }

    /**
     * One line per numeric attribute of every Kafka client MBean: the domain, the key properties in
     * their order ({@code type=consumer-metrics,client-id=x}), the attribute and its value, tab-separated.
     */
    public static String kafkaClients() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        StringBuilder out = new StringBuilder();
        for (String domain : CLIENT_DOMAINS) {
            Set<ObjectName> names;
            try {
                names = server.queryNames(new ObjectName(domain + ":*"), null);
            } catch (Exception e) {
                continue;
            }
            for (ObjectName name : names) {
                try {
                    MBeanAttributeInfo[] infos = server.getMBeanInfo(name).getAttributes();
                    String[] attributes = new String[infos.length];
                    for (int i = 0; i < infos.length; i++) {
                        attributes[i] = infos[i].getName();
                    }
                    AttributeList values = server.getAttributes(name, attributes);
                    for (Attribute attribute : values.asList()) {
                        if (attribute.getValue() instanceof Number number) {
                            out.append(domain).append('\t').append(name.getKeyPropertyListString()).append('\t')
                                .append(attribute.getName()).append('\t').append(number.doubleValue()).append('\n');
                        }
                    }
                } catch (Exception gone) {
                    // A client closed while we read it: its metrics went with it.
                }
            }
        }
        return out.toString();
    }

    /**
     * The JVM's own metrics under the JMX exporter's names, one per line: name, labels
     * ({@code area=heap}, or empty), value, tab-separated.
     */
    public static String jvm() {
        StringBuilder out = new StringBuilder();
        MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        MemoryUsage nonHeap = ManagementFactory.getMemoryMXBean().getNonHeapMemoryUsage();
        memory(out, "heap", heap);
        memory(out, "nonheap", nonHeap);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        line(out, "jvm_threads_current", "", threads.getThreadCount());
        line(out, "jvm_threads_daemon", "", threads.getDaemonThreadCount());
        line(out, "jvm_threads_peak", "", threads.getPeakThreadCount());
        line(out, "jvm_threads_started_total", "", threads.getTotalStartedThreadCount());
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            String labels = "gc=" + gc.getName();
            line(out, "jvm_gc_collection_seconds_count", labels, gc.getCollectionCount());
            line(out, "jvm_gc_collection_seconds_sum", labels, gc.getCollectionTime() / 1000.0);
        }
        return out.toString();
    }

    private static void memory(StringBuilder out, String area, MemoryUsage usage) {
        String labels = "area=" + area;
        line(out, "jvm_memory_used_bytes", labels, usage.getUsed());
        line(out, "jvm_memory_committed_bytes", labels, usage.getCommitted());
        line(out, "jvm_memory_max_bytes", labels, usage.getMax());
        line(out, "jvm_memory_init_bytes", labels, usage.getInit());
    }

    private static void line(StringBuilder out, String name, String labels, double value) {
        out.append(name).append('\t').append(labels).append('\t').append(value).append('\n');
    }
}
