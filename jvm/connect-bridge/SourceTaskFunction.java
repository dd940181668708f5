package io.sparklink.connect.bridge;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.Function;

import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The body of a source task's Spark task, on an executor (or the driver, in local mode): run the Connect
 * source task in the Connect host until Spark cancels the task's job (its stop), and return null, or the trace
 * of what failed the task. A failure is a result, not an exception: Spark would retry an exception on the same
 * config, where Connect reports the task FAILED and waits for a restart.
 */
public final class SourceTaskFunction implements Function<String, String> {
    private static final long serialVersionUID = 1L;

    private final String classPath;

    SourceTaskFunction(String classPath) {
        this.classPath = classPath;
    }

    @Override
    public String call(String spec) throws Exception {
        TaskContext context = TaskContext.get();
        BooleanSupplier stop = context::isInterrupted;
        Consumer<String> events = event -> { };
        Object host = HostLoader.host(classPath);
        try {
            return (String) Bridge.invoke(host, "runSourceTask",
                    new Class<?>[] {String.class, BooleanSupplier.class, Consumer.class}, spec, stop, events);
        } catch (Exception e) {
            throw e;
        } catch (Throwable t) {
            throw new RuntimeException(t);
        }
    }
}
