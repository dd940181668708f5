package io.sparklink.connect.host;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Headers;

import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * A sink task's dead letter queue (Connect's DeadLetterQueueReporter): the original record, as it was read from
 * Kafka, to {@code errors.deadletterqueue.topic.name} (created with one partition and
 * {@code errors.deadletterqueue.topic.replication.factor} if missing), with Connect's
 * {@code __connect.errors.*} context headers when {@code errors.deadletterqueue.context.headers.enable} is true.
 */
final class DeadLetterQueue implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(DeadLetterQueue.class);
    private static final String PREFIX = "__connect.errors.";

    private final String topic;
    private final boolean contextHeaders;
    private final String connector;
    private final int task;
    private final KafkaProducer<byte[], byte[]> producer;

    DeadLetterQueue(TaskSpec spec) {
        Map<String, String> config = spec.connectorConfig;
        topic = config.getOrDefault("errors.deadletterqueue.topic.name", "").trim();
        contextHeaders = Boolean.parseBoolean(config.getOrDefault("errors.deadletterqueue.context.headers.enable", "false"));
        connector = spec.connector;
        task = spec.task;
        if (topic.isEmpty()) {
            producer = null;
            return;
        }
        short replication = Short.parseShort(config.getOrDefault("errors.deadletterqueue.topic.replication.factor", "3").trim());
        Map<String, Object> admin = new HashMap<>(spec.clients);
        admin.putAll(Pipeline.sub(config, "admin.override"));
        // The clients are the host's (as Connect's worker makes them): with the host's loader as the thread's
        // context loader, or Kafka's ConfigDef looks its default classes up in the caller's (Spark's
        // kafka-clients 3.9 on a Py4J thread) and fails, e.g. on DefaultJwtRetriever.
        try (Swap ignored = Swap.to(DeadLetterQueue.class.getClassLoader()); Admin client = Admin.create(admin)) {
            if (!client.listTopics().names().get().contains(topic)) {
                log.info("dead letter queue topic {} does not exist; creating it", topic);
                client.createTopics(Set.of(new NewTopic(topic, 1, replication))).all().get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectException("Could not initialize dead letter queue with topic=" + topic, e);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new ConnectException("Could not initialize dead letter queue with topic=" + topic, e);
            }
        }
        Map<String, Object> props = new HashMap<>(spec.clients);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "connector-dlq-producer-" + connector + "-" + task);
        props.putAll(Pipeline.sub(config, "producer.override"));
        try (Swap ignored = Swap.to(DeadLetterQueue.class.getClassLoader())) {
            producer = new KafkaProducer<>(props);
        }
    }

    boolean enabled() {
        return producer != null;
    }

    Future<RecordMetadata> report(ConsumerRecord<byte[], byte[]> original, Pipeline.Failure failure) {
        if (producer == null || original == null) {
            return CompletableFuture.completedFuture(null);
        }
        ProducerRecord<byte[], byte[]> record = original.timestamp() == -1L
                ? new ProducerRecord<>(topic, null, original.key(), original.value(), original.headers())
                : new ProducerRecord<>(topic, null, original.timestamp(), original.key(), original.value(), original.headers());
        if (contextHeaders) {
            Headers headers = record.headers();
            headers.add(PREFIX + "topic", bytes(original.topic()));
            headers.add(PREFIX + "partition", bytes(String.valueOf(original.partition())));
            headers.add(PREFIX + "offset", bytes(String.valueOf(original.offset())));
            headers.add(PREFIX + "connector.name", bytes(connector));
            headers.add(PREFIX + "task.id", bytes(String.valueOf(task)));
            headers.add(PREFIX + "stage", bytes(failure.stage.name()));
            headers.add(PREFIX + "class.name", bytes(failure.executing.getName()));
            if (failure.error != null) {
                headers.add(PREFIX + "exception.class.name", bytes(failure.error.getClass().getName()));
                headers.add(PREFIX + "exception.message", bytes(failure.error.getMessage()));
                headers.add(PREFIX + "exception.stacktrace", stackTrace(failure.error));
            }
        }
        return producer.send(record, (metadata, error) -> {
            if (error != null) {
                log.error("Could not produce message to dead letter queue. topic={}", topic, error);
            }
        });
    }

    private static byte[] bytes(String value) {
        return value == null ? null : value.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] stackTrace(Throwable error) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        error.printStackTrace(new PrintStream(out, true, StandardCharsets.UTF_8));
        return out.toByteArray();
    }

    @Override
    public void close() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(30));
        }
    }
}
