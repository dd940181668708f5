package io.sparklink.mirror;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.TopicPartition;

/**
 * MirrorMaker 2's {@code MirrorSourceConnector} metrics of one task run, per target topic-partition,
 * measured where MM2 measures them and readable from Python at scrape time ({@link #snapshot}).
 *
 * <p>MM2 records a record's age (now minus its timestamp) and its value's size as it polls the
 * record, and counts it and its replication latency (now minus its timestamp) once the target has
 * acknowledged it ({@code MirrorSourceTask.commitRecord}). {@link OffsetSyncInterceptor} sees the same
 * two moments inside the producer: {@code onSend}, with the source timestamp already on the record,
 * and {@code onAcknowledgement}. The stats are Kafka's: a count and a rate ({@code Meter}), and the
 * last value, min, max and average of two 30 s samples. Each stat is written by one thread (a Spark
 * task thread for a partition's sends, the producer's I/O thread for its acknowledgements), so its
 * monitor is never contended: recording costs a clock read and a few arithmetic operations.
 *
 * <p>One run is one key, the same key as {@link AcknowledgedOffsets}; the run's task forgets it when
 * it stops. On a Spark cluster the producers live in executors and nothing registers here.
 */
public final class MirrorMetrics {
    static final long SAMPLE_MS = 30_000;
    private static final Map<String, MirrorMetrics> RUNS = new ConcurrentHashMap<>();

    private final Map<TopicPartition, PartitionStats> partitions = new ConcurrentHashMap<>();

    private MirrorMetrics() {
    }

    static MirrorMetrics of(String key) {
        return RUNS.computeIfAbsent(key, k -> new MirrorMetrics());
    }

    PartitionStats partition(TopicPartition tp) {
        return partitions.computeIfAbsent(tp, k -> new PartitionStats());
    }

    /**
     * One line per target topic-partition: topic, partition, record-count, record-rate, byte-count,
     * byte-rate, then record-age-ms and replication-latency-ms as last, min, max, avg (NaN when none
     * in the window), tab-separated. Empty when nothing registered under the key.
     */
    public static String snapshot(String key) {
        MirrorMetrics run = RUNS.get(key);
        StringBuilder out = new StringBuilder();
        if (run == null) {
            return "";
        }
        long now = System.currentTimeMillis();
        run.partitions.forEach((tp, stats) -> {
            out.append(tp.topic()).append('\t').append(tp.partition());
            stats.records.append(out, now);
            stats.bytes.append(out, now);
            stats.age.append(out, now);
            stats.latency.append(out, now);
            out.append('\n');
        });
        return out.toString();
    }

    /** Drop the run's entry once its task has stopped. */
    public static void forget(String key) {
        RUNS.remove(key);
    }

    /** The four sensors of one target partition. */
    static final class PartitionStats {
        final Meter records = new Meter();
        final Meter bytes = new Meter();
        final Stat age = new Stat();
        final Stat latency = new Stat();
    }

    /** A running total and its rate per second over two samples (Kafka's Meter). */
    static final class Meter {
        private long total;
        private final long[] start = new long[2];
        private final double[] amount = new double[2];
        private int current = -1;
        private final long born = System.currentTimeMillis();

        synchronized void record(double value, long now) {
            total += (long) value;
            if (current < 0 || now - start[current] >= SAMPLE_MS) {
                current = (current + 1) % 2;
                start[current] = now;
                amount[current] = 0;
            }
            amount[current] += value;
        }

        synchronized void append(StringBuilder out, long now) {
            double sum = 0;
            long oldest = now;
            for (int i = 0; i < 2; i++) {
                if (start[i] > 0 && now - start[i] < 2 * SAMPLE_MS) {
                    sum += amount[i];
                    oldest = Math.min(oldest, start[i]);
                }
            }
            // Kafka's Rate: over the time its samples cover, at least one sample's length once it is that old.
            double elapsed = Math.max(now - oldest, Math.min(SAMPLE_MS, now - born));
            out.append('\t').append(total).append('\t').append(sum / Math.max(elapsed, 1) * 1000.0);
        }
    }

    /** Last value, min, max and average over two samples (Kafka's Value, Min, Max and Avg). */
    static final class Stat {
        private double last; // Kafka's Value stat starts at 0
        private final long[] start = new long[2];
        private final long[] count = new long[2];
        private final double[] total = new double[2];
        private final double[] min = new double[2];
        private final double[] max = new double[2];
        private int current = -1;

        synchronized void record(double value, long now) {
            last = value;
            if (current < 0 || now - start[current] >= SAMPLE_MS) {
                current = (current + 1) % 2;
                start[current] = now;
                count[current] = 0;
                total[current] = 0;
                min[current] = value;
                max[current] = value;
            }
            count[current]++;
            total[current] += value;
            min[current] = Math.min(min[current], value);
            max[current] = Math.max(max[current], value);
        }

        synchronized void append(StringBuilder out, long now) {
            long n = 0;
            double sum = 0;
            double lo = Double.POSITIVE_INFINITY;
            double hi = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < 2; i++) {
                if (count[i] > 0 && now - start[i] < 2 * SAMPLE_MS) {
                    n += count[i];
                    sum += total[i];
                    lo = Math.min(lo, min[i]);
                    hi = Math.max(hi, max[i]);
                }
            }
            out.append('\t').append(last);
            if (n == 0) {
                out.append("\tNaN\tNaN\tNaN");
            } else {
                out.append('\t').append(lo).append('\t').append(hi).append('\t').append(sum / n);
            }
        }
    }
}
