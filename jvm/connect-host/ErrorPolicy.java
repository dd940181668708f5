package io.sparklink.connect.host;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Consumer;

/**
 * A Java task's {@code errors.*} settings, applied as Connect's RetryWithToleranceOperator applies them: a
 * retriable failure is retried with back-off until {@code errors.retry.timeout}; a converter or transform
 * failure (any exception) and a task's reported record are then tolerated with {@code errors.tolerance=all}
 * (logged with {@code errors.log.enable}, sent to the dead letter queue by a sink's reporter), or fail the
 * task with {@code none}: "Tolerance exceeded in error handler".
 */
final class ErrorPolicy {
    private static final Logger log = LoggerFactory.getLogger(ErrorPolicy.class);

    final boolean tolerateAll;
    final boolean logErrors;
    final boolean logMessages;
    private final long retryTimeoutMs;
    private final long retryMaxDelayMs;
    private final String taskId;
    private Consumer<Pipeline.Failure> reporter = failure -> { };
    private java.util.function.Function<Object, String> describe = String::valueOf;
    private Object current;
    private volatile boolean stopping;

    ErrorPolicy(Map<String, String> config, String taskId) {
        this.taskId = taskId;
        tolerateAll = "all".equalsIgnoreCase(config.getOrDefault("errors.tolerance", "none").trim());
        logErrors = Boolean.parseBoolean(config.getOrDefault("errors.log.enable", "false").trim());
        logMessages = Boolean.parseBoolean(config.getOrDefault("errors.log.include.messages", "false").trim());
        retryTimeoutMs = Long.parseLong(config.getOrDefault("errors.retry.timeout", "0").trim());
        retryMaxDelayMs = Long.parseLong(config.getOrDefault("errors.retry.delay.max.ms", "60000").trim());
    }

    /** Who else hears of a failed record (a sink's dead letter queue), and how a record is shown in the log. */
    void reportTo(Consumer<Pipeline.Failure> reporter, java.util.function.Function<Object, String> describe) {
        this.reporter = reporter;
        this.describe = describe;
    }

    /** The record the next operations are about (for the log line of a failure). */
    void about(Object record) {
        current = record;
    }

    void stop() {
        stopping = true;
    }

    /**
     * Run one operation on a record: its result, or null once `failure` holds a tolerated error. A converter
     * or transform stage tolerates any exception; other stages only retriable ones, after their retries.
     */
    <V> V run(Stage stage, Class<?> executing, Pipeline.Failure failure, Callable<V> operation) {
        if (failure.failed()) {
            return null;
        }
        try {
            return retrying(operation);
        } catch (Exception e) {
            boolean tolerable = stage != Stage.TASK_PUT && stage != Stage.KAFKA_PRODUCE || e instanceof RetriableException;
            failure.stage = stage;
            failure.executing = executing;
            failure.error = e;
            if (!tolerable) {
                throw new ConnectException("Unhandled exception in error handler", e);
            }
            report(failure);
            return null;
        }
    }

    /** A failure the task itself reported (ErrantRecordReporter) or a send that failed: report, then tolerate or fail. */
    void failed(Stage stage, Class<?> executing, Throwable error, Pipeline.Failure failure) {
        failure.stage = stage;
        failure.executing = executing;
        failure.error = error;
        report(failure);
    }

    private void report(Pipeline.Failure failure) {
        if (logErrors) {
            StringBuilder line = new StringBuilder("Error encountered in task ").append(taskId)
                    .append(". Executing stage '").append(failure.stage.name()).append("' with class '")
                    .append(failure.executing == null ? "null" : failure.executing.getName()).append('\'');
            if (logMessages && current != null) {
                line.append(describe.apply(current));
            }
            log.error(line.append('.').toString(), failure.error);
        }
        reporter.accept(failure);
        if (!tolerateAll) {
            throw new ConnectException("Tolerance exceeded in error handler", failure.error);
        }
    }

    private <V> V retrying(Callable<V> operation) throws Exception {
        long deadline = retryTimeoutMs < 0 ? Long.MAX_VALUE : System.currentTimeMillis() + retryTimeoutMs;
        int attempt = 0;
        while (true) {
            try {
                attempt++;
                return operation.call();
            } catch (RetriableException | org.apache.kafka.common.errors.RetriableException e) {
                long now = System.currentTimeMillis();
                if (now >= deadline || stopping) {
                    throw e;
                }
                // Connect's back-off: 300 ms doubling per attempt, capped by errors.retry.delay.max.ms and the deadline.
                long delay = Math.min(Math.min(300L << Math.min(attempt - 1, 20), retryMaxDelayMs), deadline - now);
                Thread.sleep(Math.max(delay, 0));
            }
        }
    }
}
