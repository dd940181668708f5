package io.sparklink.mirror;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Emits MirrorMaker 2 offset syncs from the producer's own acknowledgements.
 *
 * <p>sparklink's MirrorSource tasks write with Spark's Kafka sink, which never tells Python where a
 * record landed. MM2 learns it in {@code commitRecord} from the producer's RecordMetadata; this
 * interceptor sees the same metadata in {@code onAcknowledgement}. Each record carries its upstream
 * offset in one extra header, {@link #HEADER} (decimal ASCII), which {@code onSend} removes before
 * serialisation, so the target never sees it.
 *
 * <p>Pairing a send with its acknowledgement: the producer completes the records of one partition in
 * the order they were sent (the mirror's producer is idempotent), so each partition keeps a FIFO of
 * upstream offsets. A failed record breaks that guarantee (a send can fail before earlier records are
 * acknowledged), so after a failure the partition emits nothing and forgets its state until every
 * record it had in flight has been accounted for; then pairing is exact again. Every emitted sync is
 * therefore a fact: the record with that upstream offset was written at that downstream offset.
 *
 * <p>Which syncs: MM2's OffsetSyncWriter.PartitionState rule per record (first record, an upstream
 * skip, a downstream truncation, or {@code offset.lag.max} records since the last sync). A record
 * that is not due is kept as the partition's "delayed" sync, which MM2 sends at its next offset
 * commit; here a timer sends it every {@code promote.ms}. Syncs are produced by a producer of our own
 * on a thread of our own: {@code onAcknowledgement} runs on the data producer's I/O thread.
 *
 * <p>The same pairing tells how far each upstream partition has been written: with {@code .registry}
 * set, each acknowledged upstream offset is reported to {@link AcknowledgedOffsets} under that key,
 * which a task's stop reads in local mode, and MirrorMaker 2's per-partition metrics are recorded in
 * {@link MirrorMetrics} under the same key (record age and size at send, count and replication latency
 * at acknowledgement, paired through the same FIFO).
 *
 * <p>Settings (in the producer's configs, as Spark passes its {@code kafka.*} options): {@code
 * sparklink.offset.syncs.topic} (unset: no syncs), {@code .lag.max}, {@code .promote.ms}, {@code
 * .upstream.topics} ({@code remote=upstream,...}), {@code .registry}, and {@code .producer.*} for the
 * sync producer (bootstrap servers, security). With neither a topic nor a registry, the interceptor
 * only removes the header.
 */
public class OffsetSyncInterceptor implements ProducerInterceptor<byte[], byte[]> {
    public static final String HEADER = "__sparklink.upstream";
    static final String PREFIX = "sparklink.offset.syncs.";
    private static final Logger LOG = Logger.getLogger(OffsetSyncInterceptor.class.getName());

    private final Map<TopicPartition, PartitionSyncs> partitions = new ConcurrentHashMap<>();
    private final Map<String, String> upstreamOf = new HashMap<>();
    private final Map<String, Object> producerConfig = new HashMap<>();
    private String syncTopic;
    private AcknowledgedOffsets run;
    private MirrorMetrics metrics;
    private final java.util.function.LongSupplier inFlight = this::inFlight;
    private long maxLag = 100;
    private long promoteMs = 1000;
    private ScheduledThreadPoolExecutor sender;
    private Producer<byte[], byte[]> syncs;

    @Override
    public void configure(Map<String, ?> configs) {
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            String key = e.getKey();
            if (!key.startsWith(PREFIX) || e.getValue() == null) {
                continue;
            }
            String value = e.getValue().toString();
            String name = key.substring(PREFIX.length());
            if (name.equals("topic")) {
                syncTopic = value;
            } else if (name.equals("registry")) {
                run = AcknowledgedOffsets.of(value);
                run.track(inFlight);
                metrics = MirrorMetrics.of(value);
            } else if (name.equals("lag.max")) {
                maxLag = Math.max(0, Long.parseLong(value.trim()));
            } else if (name.equals("promote.ms")) {
                promoteMs = Math.max(10, Long.parseLong(value.trim()));
            } else if (name.equals("upstream.topics")) {
                for (String pair : value.split(",")) {
                    int eq = pair.indexOf('=');
                    if (eq > 0) {
                        upstreamOf.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
                    }
                }
            } else if (name.startsWith("producer.")) {
                producerConfig.put(name.substring("producer.".length()), value);
            }
        }
        if (syncTopic == null) {
            return;
        }
        sender = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "sparklink-offset-syncs");
            t.setDaemon(true);
            return t;
        });
        sender.scheduleWithFixedDelay(this::promoteDelayed, promoteMs, promoteMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        Header[] headers = record.headers().toArray();
        int carrier = CarrierHeaders.last(headers, HEADER);
        if (carrier < 0) {
            return record;
        }
        RecordHeaders kept = CarrierHeaders.without(headers, carrier);
        byte[] raw = headers[carrier].value();
        if (tracking() && raw != null && record.partition() != null) {
            long upstream = Long.parseLong(new String(raw, StandardCharsets.US_ASCII));
            TopicPartition tp = new TopicPartition(record.topic(), record.partition());
            long timestamp = record.timestamp() == null ? -1 : record.timestamp();
            PartitionSyncs state = partitions.computeIfAbsent(tp, k -> new PartitionSyncs(statsOf(tp)));
            state.sent(upstream, timestamp);
            if (state.stats != null) {
                // MM2 measures a record's age and size as it polls it (MirrorSourceTask.poll).
                long now = System.currentTimeMillis();
                if (timestamp >= 0) {
                    state.stats.age.record(now - timestamp, now);
                }
                state.stats.bytes.record(record.value() == null ? 0 : record.value().length, now);
            }
        }
        return new ProducerRecord<>(
            record.topic(), record.partition(), record.timestamp(), record.key(), record.value(), kept);
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
        if (!tracking() || metadata == null) {
            return;
        }
        PartitionSyncs state = partitions.get(new TopicPartition(metadata.topic(), metadata.partition()));
        if (state == null) {
            return;
        }
        if (run != null && exception == null) {
            run.recordWritten();
        }
        long[] sync = state.acknowledged(exception == null && metadata.hasOffset() ? metadata.offset() : -1, maxLag);
        if (state.stats != null && exception == null) {
            // MM2 counts a record and its replication latency once the target acknowledged it (commitRecord).
            long now = System.currentTimeMillis();
            state.stats.records.record(1, now);
            long timestamp = state.acknowledgedTimestamp();
            if (timestamp >= 0) {
                state.stats.latency.record(now - timestamp, now);
            }
        }
        if (sync != null && syncTopic != null) {
            send(metadata.topic(), metadata.partition(), sync[0], sync[1]);
        }
        String upstreamTopic = upstreamOf.get(metadata.topic());
        long written = state.writtenUpstream();
        if (run != null && upstreamTopic != null && written >= 0) {
            run.acknowledged(upstreamTopic, metadata.partition(), written);
        }
    }

    private MirrorMetrics.PartitionStats statsOf(TopicPartition tp) {
        return metrics == null ? null : metrics.partition(tp);
    }

    private boolean tracking() {
        return syncTopic != null || run != null;
    }

    private long inFlight() {
        long total = 0;
        for (PartitionSyncs state : partitions.values()) {
            total += state.inFlight();
        }
        return total;
    }

    private void promoteDelayed() {
        for (Map.Entry<TopicPartition, PartitionSyncs> e : partitions.entrySet()) {
            long[] sync = e.getValue().takeDelayed();
            if (sync != null) {
                produce(e.getKey().topic(), e.getKey().partition(), sync[0], sync[1]);
            }
        }
    }

    private void send(String remoteTopic, int partition, long upstream, long downstream) {
        try {
            sender.execute(() -> produce(remoteTopic, partition, upstream, downstream));
        } catch (RuntimeException closed) {
            // The interceptor is closing: a sync not sent only makes translation less tight.
        }
    }

    private void produce(String remoteTopic, int partition, long upstream, long downstream) {
        String topic = upstreamOf.get(remoteTopic);
        if (topic == null) {
            return;
        }
        if (syncs == null) {
            syncs = new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer());
        }
        // MM2's OffsetSync: key {topic: int16-length UTF-8, partition: int32}, value {upstream, downstream: int64}.
        byte[] name = topic.getBytes(StandardCharsets.UTF_8);
        byte[] key = java.nio.ByteBuffer.allocate(2 + name.length + 4)
            .putShort((short) name.length).put(name).putInt(partition).array();
        byte[] value = java.nio.ByteBuffer.allocate(16).putLong(upstream).putLong(downstream).array();
        syncs.send(new ProducerRecord<>(syncTopic, 0, key, value), (meta, error) -> {
            if (error != null) {
                // MM2 logs a failed sync and carries on.
                LOG.log(Level.WARNING, "Failure sending offset sync for " + topic + "-" + partition, error);
            }
        });
    }

    @Override
    public void close() {
        if (run != null) {
            run.untrack(inFlight);
        }
        if (sender == null) {
            return;
        }
        try {
            sender.execute(() -> {
                promoteDelayed();
                if (syncs != null) {
                    syncs.close(Duration.ofSeconds(10));
                    syncs = null;
                }
            });
            sender.shutdown();
            sender.awaitTermination(15, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "closing the offset sync producer", e);
        }
    }

    /** One target partition: upstream offsets in flight, and MM2's PartitionState. */
    static final class PartitionSyncs {
        final MirrorMetrics.PartitionStats stats; // null: no registry, nothing measured
        private long[] inFlight = new long[64];
        private long[] timestamps = new long[64]; // each in-flight record's timestamp (-1: none)
        private long ackedTimestamp = -1;
        private int head;
        private int size;
        private boolean broken;
        private long previousUpstream = -1;
        private long previousDownstream = -1;
        private long lastSyncDownstream = -1;
        private long[] delayed;
        private boolean failed; // ever: the upstream offsets written stop being a contiguous run
        private long writtenUpstream = -1;

        PartitionSyncs(MirrorMetrics.PartitionStats stats) {
            this.stats = stats;
        }

        synchronized void sent(long upstream, long timestamp) {
            if (size == inFlight.length) {
                long[] grown = new long[inFlight.length * 2];
                long[] grownTimestamps = new long[inFlight.length * 2];
                for (int i = 0; i < size; i++) {
                    grown[i] = inFlight[(head + i) % inFlight.length];
                    grownTimestamps[i] = timestamps[(head + i) % inFlight.length];
                }
                inFlight = grown;
                timestamps = grownTimestamps;
                head = 0;
            }
            inFlight[(head + size) % inFlight.length] = upstream;
            timestamps[(head + size) % inFlight.length] = timestamp;
            size++;
        }

        /** The sync due for this acknowledgement, or null; `downstream` is -1 for a failed record. */
        synchronized long[] acknowledged(long downstream, long maxLag) {
            if (size == 0) {
                ackedTimestamp = -1;
                return null; // a record sent before this partition was tracked
            }
            long upstream = inFlight[head];
            ackedTimestamp = timestamps[head];
            head = (head + 1) % inFlight.length;
            size--;
            long[] due = null;
            if (downstream < 0) {
                broken = true;
                failed = true;
            } else if (!failed) {
                writtenUpstream = upstream;
            }
            if (downstream >= 0 && !broken) {
                boolean first = lastSyncDownstream == -1;
                boolean stale = downstream - (lastSyncDownstream + 1) >= maxLag;
                boolean skipped = upstream - previousUpstream != 1;
                boolean truncated = downstream < previousDownstream;
                previousUpstream = upstream;
                previousDownstream = downstream;
                if (first || stale || skipped || truncated) {
                    lastSyncDownstream = downstream;
                    delayed = null;
                    due = new long[] {upstream, downstream};
                } else {
                    delayed = new long[] {upstream, downstream};
                }
            }
            if (broken) {
                previousUpstream = previousDownstream = lastSyncDownstream = -1;
                delayed = null;
                broken = size > 0; // once nothing is in flight, sends and acknowledgements pair up again
            }
            return due;
        }

        /** The timestamp of the record the last acknowledgement was paired with (-1: none). */
        synchronized long acknowledgedTimestamp() {
            return ackedTimestamp;
        }

        /** The last upstream offset acknowledged before any failure (-1: none). */
        synchronized long writtenUpstream() {
            return writtenUpstream;
        }

        synchronized int inFlight() {
            return size;
        }

        synchronized long[] takeDelayed() {
            long[] out = delayed;
            delayed = null;
            return out;
        }
    }
}
