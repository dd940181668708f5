package io.sparklink.spark;

import org.apache.spark.sql.api.java.UDF0;

/**
 * A number a task's query reads as a constant (a datagen task's id, the position it resumes from), held by
 * a function object rather than written into the query as a literal: the worker's {@code
 * TaskContext.held} (worker/execution/held.py).
 *
 * <p>Spark's code generation writes an int or long literal into the Java source of each stage it
 * compiles, and reuses compiled classes only for identical source. Two tasks whose plans differ in one
 * such literal, or one task restarted at a new position, compile their stage again: twice, as the
 * driver plans it and as the executor runs it, 50-200 ms of CPU per task start on a busy machine. A
 * function object reaches the generated code by reference, so every task's plan has the same source
 * and the tasks after the first reuse its classes.
 */
public final class HeldNumber implements UDF0<Object> {
  private static final long serialVersionUID = 1L;

  private final Object value;

  private HeldNumber(Object value) {
    this.value = value;
  }

  /** An INT. */
  public static HeldNumber ofInt(int value) {
    return new HeldNumber(value);
  }

  /** A BIGINT. */
  public static HeldNumber ofLong(long value) {
    return new HeldNumber(value);
  }

  @Override
  public Object call() {
    return value;
  }
}
