package io.sparklink.connect.host;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;

/**
 * The source records a task has handed to its producer and not yet seen acknowledged, per source partition, in
 * the order it returned them (Connect's SubmittedRecords): a partition's offset may be committed up to the last
 * record before its first unacknowledged one, so an offset is never stored ahead of a record Kafka does not have.
 */
final class PendingOffsets {
    private final Map<Map<String, ?>, Deque<Submitted>> byPartition = new HashMap<>();
    private int unacknowledged;

    /** One submitted record; `ack()` once the producer says it was written. */
    final class Submitted {
        private final Map<String, ?> offset;
        private boolean acked;

        private Submitted(Map<String, ?> offset) {
            this.offset = offset;
        }

        void ack() {
            synchronized (PendingOffsets.this) {
                if (!acked) {
                    acked = true;
                    unacknowledged--;
                    PendingOffsets.this.notifyAll();
                }
            }
        }
    }

    synchronized Submitted submit(Map<String, ?> partition, Map<String, ?> offset) {
        Submitted record = new Submitted(offset);
        byPartition.computeIfAbsent(partition, p -> new ArrayDeque<>()).add(record);
        unacknowledged++;
        return record;
    }

    /** The offsets that may be committed now (removing the acknowledged heads); a null offset commits as null. */
    synchronized Map<Map<String, ?>, Map<String, ?>> committable() {
        Map<Map<String, ?>, Map<String, ?>> out = new HashMap<>();
        for (Map.Entry<Map<String, ?>, Deque<Submitted>> entry : byPartition.entrySet()) {
            Deque<Submitted> queue = entry.getValue();
            boolean any = false;
            Map<String, ?> offset = null;
            while (!queue.isEmpty() && queue.peek().acked) {
                offset = queue.poll().offset;
                any = true;
            }
            if (any) {
                out.put(entry.getKey(), offset);
            }
        }
        byPartition.values().removeIf(Deque::isEmpty);
        return out;
    }

    /** Wait up to `timeoutMs` for every submitted record's acknowledgement; whether all came. */
    synchronized boolean awaitAll(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (unacknowledged > 0) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return true;
    }
}
