package io.sparklink.connect.host;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.header.Headers;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.apache.kafka.connect.util.ConnectUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;

/**
 * One Connect SinkTask on the driver, fed the micro-batches Spark's Kafka source reads for the task's share of
 * partitions (Connect's WorkerSinkTask): {@code open} with the run's partitions, for each batch every record
 * converted (key, value, headers), transformed and given to {@code put} as a SinkRecord with its topic,
 * partition, offset, timestamp and headers; every {@code offset.flush.interval.ms} (or when the task asks with
 * {@code requestCommit()}) {@code preCommit} decides which offsets the consumer group commits. Stopping commits
 * once more, then {@code close} and {@code stop}. Records the task reports through its ErrantRecordReporter, and
 * records failing conversion or a transform with {@code errors.tolerance=all}, go to the dead letter queue as
 * they were read.
 */
public final class SinkTaskHost {
    private static final Logger log = LoggerFactory.getLogger(SinkTaskHost.class);

    private final TaskSpec spec;
    private final PluginSet plugins;
    private final String id;
    private final Map<TopicPartition, OffsetAndMetadata> current = new LinkedHashMap<>();
    private final Map<TopicPartition, List<Future<?>>> reports = new HashMap<>();
    private final Set<String> topics = new TreeSet<>();
    private List<TopicPartition> assigned = List.of();
    private SinkTask task;
    private Pipeline pipeline;
    private DeadLetterQueue dlq;
    private long nextCommit;
    private volatile boolean commitRequested;
    private volatile long retryTimeoutMs = -1;

    SinkTaskHost(TaskSpec spec, PluginSet plugins) {
        this.spec = spec;
        this.plugins = plugins;
        this.id = spec.connector + "-" + spec.task;
    }

    /** initialize, start, open the run's partitions (JSON [["topic", partition], ...]). */
    public void start(String assignedJson) throws ClassNotFoundException {
        Class<?> connectorClass = plugins.pluginClass(spec.connectorClass);
        Class<?> taskClass = plugins.classFrom(connectorClass.getClassLoader(), spec.taskClass);
        task = (SinkTask) plugins.newInstance(taskClass);
        ErrorPolicy errors = new ErrorPolicy(spec.connectorConfig, id);
        pipeline = new Pipeline(plugins, spec.connectorConfig, spec.workerConverters, errors);
        dlq = new DeadLetterQueue(spec);
        errors.reportTo(this::toDeadLetters, SinkTaskHost::describe);
        List<TopicPartition> partitions = new ArrayList<>();
        for (Map<String, Object> entry : assignments(assignedJson)) {
            partitions.add(new TopicPartition((String) entry.get("topic"), ((Number) entry.get("partition")).intValue()));
        }
        assigned = List.copyOf(partitions);
        try (Swap ignored = Swap.to(loader())) {
            task.initialize(new Context());
            task.start(spec.taskConfig);
            task.open(assigned);
        }
        nextCommit = System.currentTimeMillis() + spec.offsetFlushMs;
        log.info("task {}: {} started with partitions {}", id, spec.taskClass, assigned);
    }

    private static List<Map<String, Object>> assignments(String json) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Object pair : Json.list(json)) {
            List<?> tp = (List<?>) pair;
            out.add(Map.of("topic", tp.get(0), "partition", tp.get(1)));
        }
        return out;
    }

    private ClassLoader loader() {
        return task.getClass().getClassLoader();
    }

    /**
     * One micro-batch: each row is {topic, partition, offset, timestamp ms, timestamp type id, key, value,
     * headers as [[key, value], ...]}. Returns JSON {"records": n read, "delivered": n given to put (the others
     * were dropped by a transform or failed with errors.tolerance=all), "topics": [...], "commit": {"topic": {"p":
     * offset}} or null when nothing is due}.
     */
    public String put(Iterator<Object[]> rows) throws InterruptedException {
        List<SinkRecord> records = new ArrayList<>();
        int count = 0;
        while (rows.hasNext()) {
            ConsumerRecord<byte[], byte[]> original = consumerRecord(rows.next());
            count++;
            current.put(new TopicPartition(original.topic(), original.partition()), new OffsetAndMetadata(original.offset() + 1));
            topics.add(original.topic());
            SinkRecord record = convertAndTransform(original);
            if (record != null) {
                records.add(record);
            }
        }
        deliver(records);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("records", count);
        out.put("delivered", records.size());
        out.put("topics", new ArrayList<>(topics));
        topics.clear();
        long now = System.currentTimeMillis();
        if (commitRequested || now >= nextCommit) {
            commitRequested = false;
            nextCommit = now + spec.offsetFlushMs;
            out.put("commit", preCommit());
        } else {
            out.put("commit", null);
        }
        return Json.write(out);
    }

    @SuppressWarnings("unchecked")
    private static ConsumerRecord<byte[], byte[]> consumerRecord(Object[] row) {
        RecordHeaders headers = new RecordHeaders();
        if (row[7] != null) {
            for (Object[] header : (List<Object[]>) row[7]) {
                headers.add((String) header[0], (byte[]) header[1]);
            }
        }
        byte[] key = (byte[]) row[5];
        byte[] value = (byte[]) row[6];
        int typeId = row[4] == null ? -1 : ((Number) row[4]).intValue();
        TimestampType type = typeId == 0 ? TimestampType.CREATE_TIME
                : typeId == 1 ? TimestampType.LOG_APPEND_TIME : TimestampType.NO_TIMESTAMP_TYPE;
        long timestamp = row[3] == null ? -1L : ((Number) row[3]).longValue();
        return new ConsumerRecord<>((String) row[0], ((Number) row[1]).intValue(), ((Number) row[2]).longValue(),
                timestamp, type, key == null ? -1 : key.length, value == null ? -1 : value.length, key, value,
                headers, java.util.Optional.empty());
    }

    /** Connect's WorkerSinkTask#convertAndTransformRecord: key, value, then headers; then the transforms. */
    private SinkRecord convertAndTransform(ConsumerRecord<byte[], byte[]> msg) {
        Pipeline.Failure failure = new Pipeline.Failure();
        failure.original = msg;
        ErrorPolicy errors = pipeline.errors;
        errors.about(msg);
        SchemaAndValue key = errors.run(Stage.KEY_CONVERTER, pipeline.key.getClass(), failure, () -> {
            try (Swap ignored = Swap.to(pipeline.key.getClass().getClassLoader())) {
                return pipeline.key.toConnectData(msg.topic(), msg.headers(), msg.key());
            }
        });
        SchemaAndValue value = errors.run(Stage.VALUE_CONVERTER, pipeline.value.getClass(), failure, () -> {
            try (Swap ignored = Swap.to(pipeline.value.getClass().getClassLoader())) {
                return pipeline.value.toConnectData(msg.topic(), msg.headers(), msg.value());
            }
        });
        Headers headers = errors.run(Stage.HEADER_CONVERTER, pipeline.header.getClass(), failure, () -> {
            ConnectHeaders out = new ConnectHeaders();
            try (Swap ignored = Swap.to(pipeline.header.getClass().getClassLoader())) {
                for (org.apache.kafka.common.header.Header header : msg.headers()) {
                    SchemaAndValue converted = pipeline.header.toConnectHeader(msg.topic(), header.key(), header.value());
                    out.add(header.key(), converted);
                }
            }
            return out;
        });
        if (failure.failed()) {
            return null;
        }
        Long timestamp = ConnectUtils.checkAndConvertTimestamp(msg.timestamp());
        SinkRecord record = new HostSinkRecord(msg, msg.topic(), msg.partition(), key.schema(), key.value(),
                value.schema(), value.value(), msg.offset(), timestamp, msg.timestampType(), headers);
        return pipeline.transform(record, failure);
    }

    /** put() the records, retrying after a RetriableException as Connect does (context.timeout, else at once). */
    private void deliver(List<SinkRecord> records) throws InterruptedException {
        long deadline = retryTimeoutMs < 0 ? Long.MAX_VALUE : System.currentTimeMillis() + retryTimeoutMs;
        while (true) {
            try (Swap ignored = Swap.to(loader())) {
                task.put(records);
                return;
            } catch (RetriableException e) {
                if (System.currentTimeMillis() >= deadline) {
                    throw new ConnectException("put() kept failing with retriable errors", e);
                }
                log.warn("task {}: put() failed with a retriable error; retrying it", id, e);
                Thread.sleep(Math.max(retryTimeoutMs, 100));
            }
        }
    }

    /** preCommit(current offsets): what the group commits, as {"topic": {"partition": offset}}, after the dead
     * letter queue has the records reported for those partitions. */
    private Map<String, Map<String, Long>> preCommit() {
        Map<TopicPartition, OffsetAndMetadata> offered = new HashMap<>(current);
        Map<TopicPartition, OffsetAndMetadata> decided;
        try (Swap ignored = Swap.to(loader())) {
            decided = task.preCommit(offered);
        }
        Map<String, Map<String, Long>> out = new LinkedHashMap<>();
        if (decided == null) {
            return out;
        }
        awaitReports(decided.keySet());
        decided.forEach((tp, offset) -> {
            if (offset != null && assigned.contains(tp)) {
                out.computeIfAbsent(tp.topic(), t -> new LinkedHashMap<>()).put(String.valueOf(tp.partition()), offset.offset());
            }
        });
        return out;
    }

    private void awaitReports(Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            List<Future<?>> pending = reports.remove(tp);
            if (pending == null) {
                continue;
            }
            for (Future<?> future : pending) {
                try {
                    future.get();
                } catch (Exception e) {
                    throw new ConnectException("writing a record to the dead letter queue failed", e);
                }
            }
        }
    }

    /** The last commit, then close(partitions) and stop(); returns the offsets to commit (JSON, as put's). */
    public String stop() {
        if (task == null) {
            return "{}";
        }
        Map<String, Map<String, Long>> last = Map.of();
        try {
            last = preCommit();
        } catch (RuntimeException e) {
            log.error("task {}: the final preCommit failed; nothing more is committed", id, e);
        }
        try (Swap ignored = Swap.to(loader())) {
            task.close(assigned);
        } catch (RuntimeException e) {
            log.error("task {}: close() failed", id, e);
        }
        try (Swap ignored = Swap.to(loader())) {
            task.stop();
        } catch (RuntimeException e) {
            log.error("task {}: stop() failed", id, e);
        }
        pipeline.close();
        dlq.close();
        log.info("task {} stopped", id);
        return Json.write(last);
    }

    private void toDeadLetters(Pipeline.Failure failure) {
        if (failure.original == null) {
            return;
        }
        ConsumerRecord<byte[], byte[]> original = failure.original;
        Future<?> sent = dlq.report(original, failure);
        if (!sent.isDone()) {
            reports.computeIfAbsent(new TopicPartition(original.topic(), original.partition()), k -> new ArrayList<>()).add(sent);
        }
    }

    private static String describe(Object record) {
        if (!(record instanceof ConsumerRecord<?, ?> msg)) {
            return ", where consumed record is " + record;
        }
        StringBuilder out = new StringBuilder(", where consumed record is {topic='").append(msg.topic())
                .append("', partition=").append(msg.partition()).append(", offset=").append(msg.offset());
        if (msg.timestampType() == TimestampType.CREATE_TIME || msg.timestampType() == TimestampType.LOG_APPEND_TIME) {
            out.append(", timestamp=").append(msg.timestamp()).append(", timestampType=").append(msg.timestampType());
        }
        return out.append('}').toString();
    }

    /** The ErrantRecordReporter (when a dead letter queue or the error log is configured): Connect's
     * WorkerErrantRecordReporter, stage TASK_PUT, executing class SinkTask. */
    private final class Reporter implements ErrantRecordReporter {
        @Override
        public Future<Void> report(SinkRecord record, Throwable error) {
            Pipeline.Failure failure = new Pipeline.Failure();
            failure.original = record instanceof HostSinkRecord own ? own.original : reserialize(record);
            pipeline.errors.about(failure.original);
            pipeline.errors.failed(Stage.TASK_PUT, SinkTask.class, error, failure);
            return CompletableFuture.completedFuture(null);
        }

        private ConsumerRecord<byte[], byte[]> reserialize(SinkRecord record) {
            String topic = record.topic();
            byte[] key = pipeline.key.fromConnectData(topic, record.keySchema(), record.key());
            byte[] value = pipeline.value.fromConnectData(topic, record.valueSchema(), record.value());
            RecordHeaders headers = new RecordHeaders();
            for (Header header : record.headers()) {
                headers.add(header.key(), pipeline.header.fromConnectHeader(topic, header.key(), header.schema(), header.value()));
            }
            long timestamp = record.timestamp() == null ? -1L : record.timestamp();
            return new ConsumerRecord<>(topic, record.kafkaPartition(), record.kafkaOffset(), timestamp,
                    record.timestampType(), key == null ? -1 : key.length, value == null ? -1 : value.length, key, value,
                    headers, java.util.Optional.empty());
        }
    }

    private final class Context implements SinkTaskContext {
        private final Reporter reporter = dlq.enabled() || pipeline.errors.logErrors ? new Reporter() : null;
        private final org.apache.kafka.common.metrics.PluginMetrics metrics =
                PluginMetricsSupport.forTask(spec.connector, spec.task);

        @Override
        public Map<String, String> configs() {
            return spec.taskConfig;
        }

        @Override
        public void offset(Map<TopicPartition, Long> offsets) {
            log.warn("task {}: offset() rewinds are not supported; the task goes on from where it is ({})", id, offsets);
        }

        @Override
        public void offset(TopicPartition tp, long offset) {
            offset(Map.of(tp, offset));
        }

        @Override
        public void timeout(long timeoutMs) {
            retryTimeoutMs = timeoutMs;
        }

        @Override
        public Set<TopicPartition> assignment() {
            return Set.copyOf(assigned);
        }

        @Override
        public void pause(TopicPartition... partitions) {
            log.warn("task {}: pause() is not supported; records keep coming", id);
        }

        @Override
        public void resume(TopicPartition... partitions) {
        }

        @Override
        public void requestCommit() {
            commitRequested = true;
        }

        @Override
        public ErrantRecordReporter errantRecordReporter() {
            return reporter;
        }

        @Override
        public org.apache.kafka.common.metrics.PluginMetrics pluginMetrics() {
            return metrics;
        }
    }

    /** A SinkRecord that remembers the record it was read as (Connect's InternalSinkRecord), through transforms. */
    private static final class HostSinkRecord extends SinkRecord {
        private final ConsumerRecord<byte[], byte[]> original;

        HostSinkRecord(ConsumerRecord<byte[], byte[]> original, String topic, int partition, Schema keySchema, Object key,
                       Schema valueSchema, Object value, long offset, Long timestamp, TimestampType timestampType,
                       Iterable<Header> headers) {
            super(topic, partition, keySchema, key, valueSchema, value, offset, timestamp, timestampType, headers,
                    original.topic(), original.partition(), original.offset());
            this.original = original;
        }

        @Override
        public SinkRecord newRecord(String topic, Integer kafkaPartition, Schema keySchema, Object key,
                                    Schema valueSchema, Object value, Long timestamp, Iterable<Header> headers) {
            return new HostSinkRecord(original, topic, kafkaPartition, keySchema, key, valueSchema, value,
                    kafkaOffset(), timestamp, timestampType(), headers);
        }

        @Override
        public boolean equals(Object o) {
            return super.equals(o);
        }

        @Override
        public int hashCode() {
            return super.hashCode();
        }
    }
}
