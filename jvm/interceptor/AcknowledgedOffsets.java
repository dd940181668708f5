package io.sparklink.mirror;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

import org.apache.kafka.common.TopicPartition;

/**
 * How far the target has acknowledged each upstream partition of one task run, readable from Python.
 *
 * <p>A MirrorSource task in Spark's real-time mode checkpoints once per long batch; stopping it
 * interrupts its Spark tasks mid-batch, so the query's last progress lags what was written by up to a
 * batch. In local mode the Spark tasks run in the driver's JVM, so the task's stop reads the exact
 * position here instead (Py4J: {@link #acknowledged}, {@link #inFlight}, {@link #forget}). On a
 * Spark cluster the producers live in executors, nothing registers here, and the task falls back to
 * its progress.
 *
 * <p>One run is one registry key (the task's producer config carries it), so the Spark producer cache
 * gives each run its own producer and a later run never sees an earlier run's acknowledgements.
 * Positions are facts: a partition advances only while every record it sent has been acknowledged
 * in order, and stops advancing after its first failure.
 */
public final class AcknowledgedOffsets {
    private static final Map<String, AcknowledgedOffsets> RUNS = new ConcurrentHashMap<>();

    private final Map<TopicPartition, Long> acked = new ConcurrentHashMap<>();
    private final Set<LongSupplier> inFlightCounters = ConcurrentHashMap.newKeySet();
    private final LongAdder records = new LongAdder();

    private AcknowledgedOffsets() {
    }

    static AcknowledgedOffsets of(String key) {
        return RUNS.computeIfAbsent(key, k -> new AcknowledgedOffsets());
    }

    void track(LongSupplier inFlight) {
        inFlightCounters.add(inFlight);
    }

    void untrack(LongSupplier inFlight) {
        inFlightCounters.remove(inFlight);
    }

    void acknowledged(String upstreamTopic, int partition, long upstreamOffset) {
        acked.merge(new TopicPartition(upstreamTopic, partition), upstreamOffset, Math::max);
    }

    void recordWritten() {
        records.increment();
    }

    /**
     * Records of this run the target has acknowledged (-1: nothing registered). A real-time task's
     * batches, and so the record counts of its progress, are a minute or more apart; this is current.
     */
    public static long records(String key) {
        AcknowledgedOffsets run = RUNS.get(key);
        return run == null ? -1 : run.records.sum();
    }

    /** The last acknowledged upstream offset per partition, one {@code topic<TAB>partition<TAB>offset} per line. */
    public static String acknowledged(String key) {
        AcknowledgedOffsets run = RUNS.get(key);
        StringBuilder out = new StringBuilder();
        if (run != null) {
            run.acked.forEach((tp, offset) ->
                out.append(tp.topic()).append('\t').append(tp.partition()).append('\t').append(offset).append('\n'));
        }
        return out.toString();
    }

    /** Records of this run sent to the producer and not yet acknowledged (-1: nothing registered). */
    public static long inFlight(String key) {
        AcknowledgedOffsets run = RUNS.get(key);
        if (run == null) {
            return -1;
        }
        long total = 0;
        for (LongSupplier counter : run.inFlightCounters) {
            total += counter.getAsLong();
        }
        return total;
    }

    /** Drop the run's entry (and its {@link MirrorMetrics}) once its task has stored the positions. */
    public static void forget(String key) {
        RUNS.remove(key);
        MirrorMetrics.forget(key);
    }
}
