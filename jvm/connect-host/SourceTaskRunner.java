package io.sparklink.connect.host;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.json.JsonConverterConfig;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;
import org.apache.kafka.connect.storage.OffsetStorageReaderImpl;
import org.apache.kafka.connect.storage.OffsetStorageWriter;
import org.apache.kafka.connect.util.ConnectUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One Connect SourceTask, run for as long as its Spark task runs (Connect's WorkerSourceTask, non-transactional):
 * {@code poll()}, each record through the connector's transforms and converters into Kafka with the task's own
 * producer, {@code commitRecord(record, metadata)} on each acknowledgement, and every
 * {@code offset.flush.interval.ms} the committable source offsets (those of records Kafka has, in poll order)
 * written to the worker's offsets topic in Connect's format, then {@code commit()}. A stop request ends the
 * loop after the poll in hand; the last offsets are committed before the task is stopped and the call returns.
 */
final class SourceTaskRunner {
    private static final Logger log = LoggerFactory.getLogger(SourceTaskRunner.class);

    private final TaskSpec spec;
    private final PluginSet plugins;
    private final BooleanSupplier stopRequested;
    private final Consumer<String> events;
    private final PendingOffsets pending = new PendingOffsets();
    private final AtomicReference<Throwable> sendFailure = new AtomicReference<>();
    private final String id;
    private SourceTask task;
    private Pipeline pipeline;
    private KafkaProducer<byte[], byte[]> producer;
    private KafkaOffsets store;
    private OffsetStorageWriter writer;
    private OffsetStorageReaderImpl reader;
    private volatile boolean stopped;
    private volatile boolean polling;

    SourceTaskRunner(TaskSpec spec, PluginSet plugins, BooleanSupplier stopRequested, Consumer<String> events) {
        this.spec = spec;
        this.plugins = plugins;
        this.stopRequested = stopRequested;
        this.events = events;
        this.id = spec.connector + "-" + spec.task;
    }

    /** Run the task until a stop is requested; throws what fails it (after committing what Kafka has). */
    void run() throws Exception {
        // As Connect's WorkerTask thread: the plugin's loader is the context loader for the whole run, so the
        // host's Kafka clients and the plugin resolve classes among theirs, not the Spark task thread's.
        try (Swap ignored = Swap.to(plugins.connectorClassHere(spec.connectorClass).getClassLoader())) {
            runInLoader();
        }
    }

    private void runInLoader() throws Exception {
        Thread watcher = null;
        boolean started = false;
        try {
            start();
            started = true;
            watcher = stopWatcher();
            loop();
            commitOffsets(true);
        } catch (Throwable failure) {
            if (started) {
                try {
                    commitOffsets(true);
                } catch (Exception e) {
                    log.error("task {}: committing offsets of a failing task failed", id, e);
                }
            }
            throw failure;
        } finally {
            if (watcher != null) {
                watcher.interrupt();
            }
            close();
        }
    }

    private void start() throws ClassNotFoundException {
        Class<?> connectorClass = plugins.pluginClass(spec.connectorClass);
        Class<?> taskClass = plugins.classFrom(connectorClass.getClassLoader(), spec.taskClass);
        task = (SourceTask) plugins.newInstance(taskClass);
        ErrorPolicy errors = new ErrorPolicy(spec.connectorConfig, id);
        errors.reportTo(failure -> { }, record -> ", where source record is = " + record);
        pipeline = new Pipeline(plugins, spec.connectorConfig, spec.workerConverters, errors);
        store = new KafkaOffsets(spec.offsetsTopic, spec.clients);
        store.start();
        JsonConverter keys = internalConverter(true);
        JsonConverter values = internalConverter(false);
        writer = new OffsetStorageWriter(store, spec.connector, keys, values);
        reader = new OffsetStorageReaderImpl(store, spec.connector, keys, values);
        producer = new KafkaProducer<>(producerConfig());
        try (Swap ignored = Swap.to(taskClass.getClassLoader())) {
            task.initialize(new Context(spec.taskConfig, reader, PluginMetricsSupport.forTask(spec.connector, spec.task)));
            task.start(spec.taskConfig);
        }
        log.info("task {}: {} started", id, spec.taskClass);
        events.accept("started");
    }

    private static JsonConverter internalConverter(boolean isKey) {
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of(JsonConverterConfig.SCHEMAS_ENABLE_CONFIG, "false"), isKey);
        return converter;
    }

    /** Connect's task producer (Worker#baseProducerConfigs): acks=all, one request in flight, retried for ever. */
    private Map<String, Object> producerConfig() {
        Map<String, Object> props = new HashMap<>(spec.clients);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(Long.MAX_VALUE));
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.toString(Integer.MAX_VALUE));
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "connector-producer-" + id);
        props.putAll(Pipeline.sub(spec.connectorConfig, "producer.override"));
        return props;
    }

    /** If a stop is asked while poll() blocks past the grace, stop the task from here (SourceTask#stop may
     * be called from another thread to interrupt a poll). */
    private Thread stopWatcher() {
        Thread thread = new Thread(() -> {
            try {
                while (!stopRequested.getAsBoolean()) {
                    Thread.sleep(100);
                }
                Thread.sleep(spec.stopGraceMs);
                if (polling) {
                    log.info("task {}: poll() still blocks {} ms after the stop; stopping the task", id, spec.stopGraceMs);
                    stopTask();
                }
            } catch (InterruptedException e) {
                // the task ended first
            }
        }, "sparklink-stop-" + id);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    private void loop() throws Exception {
        long nextCommit = System.currentTimeMillis() + spec.offsetFlushMs;
        List<SourceRecord> toSend = null;
        while (!stopRequested.getAsBoolean()) {
            if (System.currentTimeMillis() >= nextCommit) {
                commitOffsets(false);
                nextCommit = System.currentTimeMillis() + spec.offsetFlushMs;
            }
            throwIfSendFailed();
            if (toSend == null) {
                toSend = poll();
                if (toSend == null || toSend.isEmpty()) {
                    toSend = null;
                    continue;
                }
            }
            toSend = send(toSend);
            if (toSend != null) {
                Thread.sleep(100); // a retriable send failure: back off, then send the rest (Connect: SEND_FAILED_BACKOFF_MS)
            }
        }
    }

    private List<SourceRecord> poll() throws InterruptedException {
        polling = true;
        try (Swap ignored = Swap.to(task.getClass().getClassLoader())) {
            return task.poll();
        } catch (RetriableException | org.apache.kafka.common.errors.RetriableException e) {
            log.warn("task {}: poll() failed; it is polled again", id, e);
            return null;
        } finally {
            polling = false;
        }
    }

    /** Send a polled batch; the records left to send after a retriable failure, else null. */
    private List<SourceRecord> send(List<SourceRecord> records) {
        int processed = 0;
        for (SourceRecord original : records) {
            Pipeline.Failure failure = new Pipeline.Failure();
            pipeline.errors.about(original);
            SourceRecord record = pipeline.transform(original, failure);
            ProducerRecord<byte[], byte[]> converted = record == null ? null : convert(record, failure);
            if (converted == null || failure.failed()) {
                commitRecord(original, null); // filtered or tolerated: Connect commits it with null metadata
                processed++;
                continue;
            }
            PendingOffsets.Submitted submitted = pending.submit(original.sourcePartition(), original.sourceOffset());
            try {
                producer.send(converted, (metadata, error) -> {
                    if (error != null) {
                        if (!stopped) {
                            log.error("task {}: failed to send a record to {}", id, converted.topic(), error);
                        }
                        if (pipeline.errors.tolerateAll) {
                            commitRecord(original, null);
                            submitted.ack();
                        } else {
                            sendFailure.compareAndSet(null, error);
                        }
                        return;
                    }
                    commitRecord(original, metadata);
                    submitted.ack();
                    events.accept("topic:" + metadata.topic());
                });
            } catch (org.apache.kafka.common.errors.RetriableException e) {
                log.warn("task {}: sending to {} failed; backing off before sending the rest", id, converted.topic(), e);
                return records.subList(processed, records.size());
            }
            processed++;
        }
        return null;
    }

    private ProducerRecord<byte[], byte[]> convert(SourceRecord record, Pipeline.Failure failure) {
        ErrorPolicy errors = pipeline.errors;
        RecordHeaders headers = errors.run(Stage.HEADER_CONVERTER, pipeline.header.getClass(), failure, () -> {
            RecordHeaders out = new RecordHeaders();
            if (record.headers() != null) {
                try (Swap ignored = Swap.to(pipeline.header.getClass().getClassLoader())) {
                    for (org.apache.kafka.connect.header.Header header : record.headers()) {
                        out.add(header.key(), pipeline.header.fromConnectHeader(record.topic(), header.key(),
                                header.schema(), header.value()));
                    }
                }
            }
            return out;
        });
        byte[] key = errors.run(Stage.KEY_CONVERTER, pipeline.key.getClass(), failure, () -> {
            try (Swap ignored = Swap.to(pipeline.key.getClass().getClassLoader())) {
                return pipeline.key.fromConnectData(record.topic(), headers, record.keySchema(), record.key());
            }
        });
        byte[] value = errors.run(Stage.VALUE_CONVERTER, pipeline.value.getClass(), failure, () -> {
            try (Swap ignored = Swap.to(pipeline.value.getClass().getClassLoader())) {
                return pipeline.value.fromConnectData(record.topic(), headers, record.valueSchema(), record.value());
            }
        });
        if (failure.failed()) {
            return null;
        }
        Iterable<Header> all = headers;
        return new ProducerRecord<>(record.topic(), record.kafkaPartition(),
                ConnectUtils.checkAndConvertTimestamp(record.timestamp()), key, value, all);
    }

    private void commitRecord(SourceRecord record, RecordMetadata metadata) {
        try (Swap ignored = Swap.to(task.getClass().getClassLoader())) {
            task.commitRecord(record, metadata);
        } catch (Throwable t) {
            log.error("task {}: commitRecord() failed", id, t);
        }
    }

    private void throwIfSendFailed() {
        Throwable failed = sendFailure.get();
        if (failed != null) {
            throw new ConnectException("Unrecoverable exception from producer send callback", failed);
        }
    }

    /**
     * Write the committable offsets to the offsets topic and wait for the brokers, then call the task's
     * commit() (Connect's WorkerSourceTask#commitOffsets). `last`: first wait for every record in flight.
     */
    private void commitOffsets(boolean last) throws Exception {
        if (writer == null) {
            return;
        }
        if (last && !pending.awaitAll(spec.offsetCommitTimeoutMs)) {
            log.warn("task {}: records still unacknowledged after {} ms; their offsets are not committed", id,
                    spec.offsetCommitTimeoutMs);
        }
        pending.committable().forEach(writer::offset);
        if (writer.beginFlush(spec.offsetCommitTimeoutMs, TimeUnit.MILLISECONDS)) {
            Future<Void> flushed = writer.doFlush((error, result) -> {
                if (error != null) {
                    log.error("task {}: writing offsets failed", id, error);
                }
            });
            if (flushed == null) {
                writer.cancelFlush();
                return;
            }
            try {
                flushed.get(spec.offsetCommitTimeoutMs, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                log.error("task {}: offsets not written within {} ms; they are written with the next commit", id,
                        spec.offsetCommitTimeoutMs, e);
                writer.cancelFlush();
                return;
            }
        }
        try (Swap ignored = Swap.to(task.getClass().getClassLoader())) {
            task.commit();
        } catch (Throwable t) {
            log.error("task {}: commit() failed", id, t);
        }
    }

    private synchronized void stopTask() {
        if (stopped || task == null) {
            return;
        }
        stopped = true;
        try (Swap ignored = Swap.to(task.getClass().getClassLoader())) {
            task.stop();
        } catch (Throwable t) {
            log.error("task {}: stop() failed", id, t);
        }
    }

    private void close() {
        stopTask();
        if (producer != null) {
            producer.close(Duration.ofSeconds(30));
        }
        if (reader != null) {
            reader.close();
        }
        if (store != null) {
            store.stop();
        }
        if (pipeline != null) {
            pipeline.close();
        }
        log.info("task {} stopped", id);
    }

    /** The SourceTaskContext a task is initialised with. */
    private record Context(Map<String, String> configs, OffsetStorageReader offsetStorageReader,
                           org.apache.kafka.common.metrics.PluginMetrics pluginMetrics) implements SourceTaskContext {
    }
}
