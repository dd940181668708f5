package io.sparklink.connect.bridge;

import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.UUID;

/**
 * A Connect source task as a Spark job of one long-running task, seen from the driver. The job is submitted
 * from a thread of its own under a job group named after the run; stopping cancels the group without
 * interrupting the task's thread, which the task sees as TaskContext#isInterrupted: it ends its loop,
 * commits its offsets and returns, and `stop` waits for that task's end (JobTracker). A task that fails
 * returns its trace (SourceTaskFunction), kept here as the run's failure.
 */
public final class SourceJob {
    private final SparkContext sc;
    private final String group = "sparklink-source-" + UUID.randomUUID();
    private final Thread thread;
    private volatile String failure;
    private volatile boolean done;
    private volatile boolean stopping;
    private volatile boolean submitted;

    private SourceJob(SparkContext sc, String classPath, String spec, String name) {
        this.sc = sc;
        JobTracker.on(sc);
        thread = new Thread(() -> run(classPath, spec, name), "sparklink-job-" + name);
        thread.setDaemon(true);
    }

    static SourceJob start(SparkContext sc, String classPath, String spec, String name) {
        SourceJob job = new SourceJob(sc, classPath, spec, name);
        job.thread.start();
        return job;
    }

    private void run(String classPath, String spec, String name) {
        try {
            sc.setJobGroup(group, "Connect source task " + name, false);
            JavaSparkContext jsc = JavaSparkContext.fromSparkContext(sc);
            synchronized (this) {
                if (stopping) {
                    return;
                }
                submitted = true;
            }
            List<String> results = jsc.parallelize(List.of(spec), 1).map(new SourceTaskFunction(classPath)).collect();
            String result = results.isEmpty() ? null : results.get(0);
            if (result != null) {
                failure = result;
            }
        } catch (Throwable t) {
            if (!stopping) {
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                failure = trace.toString();
            }
        } finally {
            done = true;
        }
    }

    public String id() {
        return group;
    }

    public boolean isActive() {
        return !done;
    }

    /** The trace of what ended the task, once it has ended other than by a stop; null otherwise. */
    public String failure() {
        return failure;
    }

    /** The executor that runs (or last ran) the task: "driver" in local mode, else the executor's id. */
    public String executor() {
        return JobTracker.on(sc).executor(group);
    }

    /** Stop the task: cancel its job and wait up to `waitMs` for the task to have ended; whether it did. */
    public boolean stop(long waitMs) throws InterruptedException {
        synchronized (this) {
            stopping = true;
        }
        long deadline = System.currentTimeMillis() + waitMs;
        // Also cancels the job if its thread submits it only after this call.
        sc.cancelJobGroupAndFutureJobs(group, "the Connect task is stopping");
        thread.join(Math.max(1, waitMs));
        long left = Math.max(1, deadline - System.currentTimeMillis());
        return JobTracker.on(sc).awaitTasks(group, submitted, left);
    }
}
