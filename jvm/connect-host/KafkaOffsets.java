package io.sparklink.connect.host;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.OffsetBackingStore;
import org.apache.kafka.connect.util.Callback;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The worker's offsets topic as a task's {@link OffsetBackingStore}: read to its end when the task starts (its
 * {@code OffsetStorageReader}), then written through a producer of its own. Keys and values are the bytes
 * Connect's {@code OffsetStorageWriter} makes ({@code ["<connector>",{partition}]} and the offset map, JSON
 * without schemas) and go to the partition Kafka's default partitioner picks for the key, as Connect's
 * KafkaOffsetBackingStore writes them: Apache Connect and sparklink's own offset store read the same records.
 */
final class KafkaOffsets implements OffsetBackingStore {
    private static final Duration READ_TIMEOUT = Duration.ofSeconds(60);

    private final String topic;
    private final Map<String, Object> clients;
    private final Map<ByteBuffer, ByteBuffer> data = new ConcurrentHashMap<>();
    private KafkaProducer<byte[], byte[]> producer;

    KafkaOffsets(String topic, Map<String, Object> clients) {
        this.topic = topic;
        this.clients = clients;
    }

    @Override
    public void start() {
        Map<String, Object> props = new HashMap<>(clients);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.remove(ConsumerConfig.GROUP_ID_CONFIG);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = new ArrayList<>();
            List<PartitionInfo> infos = consumer.partitionsFor(topic, READ_TIMEOUT);
            if (infos == null || infos.isEmpty()) {
                throw new ConnectException("the offsets topic " + topic + " does not exist");
            }
            for (PartitionInfo info : infos) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, READ_TIMEOUT);
            long deadline = System.currentTimeMillis() + READ_TIMEOUT.toMillis();
            while (!caughtUp(consumer, ends)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new ConnectException("reading the offsets topic " + topic + " to its end took over "
                            + READ_TIMEOUT.toSeconds() + "s");
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    apply(record.key(), record.value());
                }
            }
        }
        Map<String, Object> producerProps = new HashMap<>(clients);
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        // As Connect's offsets producer: every write acknowledged by all in-sync replicas, retried for ever.
        producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
        producerProps.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.MAX_VALUE);
        producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        producer = new KafkaProducer<>(producerProps);
    }

    private static boolean caughtUp(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    private void apply(byte[] key, byte[] value) {
        if (key == null) {
            return;
        }
        if (value == null) {
            data.remove(ByteBuffer.wrap(key));
        } else {
            data.put(ByteBuffer.wrap(key), ByteBuffer.wrap(value));
        }
    }

    @Override
    public void stop() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(30));
            producer = null;
        }
    }

    @Override
    public Future<Map<ByteBuffer, ByteBuffer>> get(Collection<ByteBuffer> keys) {
        Map<ByteBuffer, ByteBuffer> out = new HashMap<>();
        for (ByteBuffer key : keys) {
            ByteBuffer value = data.get(key);
            if (value != null) {
                out.put(key, value);
            }
        }
        return CompletableFuture.completedFuture(out);
    }

    @Override
    public Future<Void> set(Map<ByteBuffer, ByteBuffer> values, Callback<Void> callback) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (values.isEmpty()) {
            done.complete(null);
            if (callback != null) {
                callback.onCompletion(null, null);
            }
            return done;
        }
        AtomicInteger pending = new AtomicInteger(values.size());
        AtomicReference<Exception> failure = new AtomicReference<>();
        for (Map.Entry<ByteBuffer, ByteBuffer> entry : values.entrySet()) {
            byte[] key = bytes(entry.getKey());
            byte[] value = entry.getValue() == null ? null : bytes(entry.getValue());
            producer.send(new ProducerRecord<>(topic, key, value), (metadata, error) -> {
                if (error != null) {
                    failure.compareAndSet(null, error);
                } else {
                    apply(key, value);
                }
                if (pending.decrementAndGet() == 0) {
                    Exception failed = failure.get();
                    if (callback != null) {
                        callback.onCompletion(failed, null);
                    }
                    if (failed != null) {
                        done.completeExceptionally(failed);
                    } else {
                        done.complete(null);
                    }
                }
            });
        }
        return done;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] out = new byte[copy.remaining()];
        copy.get(out);
        return out;
    }

    @Override
    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
        return Set.of(); // the worker's REST reads offsets from its own store, not through a task
    }

    @Override
    public void configure(WorkerConfig config) {
        // configured at construction from the worker's client settings
    }
}
