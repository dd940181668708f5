package io.sparklink.connect.bridge;

import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Which Spark tasks of the source jobs still run, from the scheduler's events (one listener per SparkContext).
 * A cancelled job ends at once for the driver, but its killed task reports its end only once its code returns;
 * a stop waits for that, so a task's last offsets are committed before the next run of it starts.
 */
final class JobTracker extends SparkListener {
    private static final Map<SparkContext, JobTracker> TRACKERS = new WeakHashMap<>();
    private static final String JOB_GROUP = "spark.jobGroup.id";

    private final Map<Integer, String> stageGroups = new HashMap<>();
    private final Map<Integer, String> jobGroups = new HashMap<>();
    private final Set<String> ended = new HashSet<>();
    private final Map<String, Set<Long>> running = new HashMap<>();
    private final Map<String, String> executors = new HashMap<>();

    static synchronized JobTracker on(SparkContext sc) {
        return TRACKERS.computeIfAbsent(sc, context -> {
            JobTracker tracker = new JobTracker();
            context.addSparkListener(tracker);
            return tracker;
        });
    }

    @Override
    public synchronized void onJobStart(SparkListenerJobStart event) {
        String group = event.properties() == null ? null : event.properties().getProperty(JOB_GROUP);
        if (group != null && group.startsWith("sparklink-source-")) {
            jobGroups.put(event.jobId(), group);
            scala.collection.Iterator<Object> stages = event.stageIds().iterator();
            while (stages.hasNext()) {
                stageGroups.put((Integer) stages.next(), group);
            }
        }
    }

    @Override
    public synchronized void onJobEnd(SparkListenerJobEnd event) {
        String group = jobGroups.remove(event.jobId());
        if (group != null) {
            ended.add(group);
            notifyAll();
        }
    }

    @Override
    public synchronized void onTaskStart(SparkListenerTaskStart event) {
        String group = stageGroups.get(event.stageId());
        if (group != null) {
            running.computeIfAbsent(group, g -> new HashSet<>()).add(event.taskInfo().taskId());
            executors.put(group, event.taskInfo().executorId());
            notifyAll();
        }
    }

    @Override
    public synchronized void onTaskEnd(SparkListenerTaskEnd event) {
        String group = stageGroups.get(event.stageId());
        if (group != null) {
            Set<Long> tasks = running.get(group);
            if (tasks != null) {
                tasks.remove(event.taskInfo().taskId());
            }
            notifyAll();
        }
    }

    synchronized String executor(String group) {
        return executors.get(group);
    }

    /**
     * Wait until the group's job has ended for the scheduler and no task of it runs; false if one still does
     * after `waitMs`. The listener bus delivers a task's start before its job's end, so a task launched just
     * before the cancellation is waited for too.
     */
    synchronized boolean awaitTasks(String group, boolean submitted, long waitMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + waitMs;
        while (true) {
            Set<Long> tasks = running.get(group);
            if ((!submitted || ended.contains(group)) && (tasks == null || tasks.isEmpty())) {
                running.remove(group);
                ended.remove(group);
                stageGroups.values().removeIf(group::equals);
                return true;
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
    }
}
