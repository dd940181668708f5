package io.sparklink.spark;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF0;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

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

  /** A non-null INT column of {@code value}. */
  public static Column ofInt(int value) {
    return column(value, DataTypes.IntegerType);
  }

  /** A non-null BIGINT column of {@code value}. */
  public static Column ofLong(long value) {
    return column(value, DataTypes.LongType);
  }

  // Made here rather than through py4j: `functions.udf` is overloaded, and py4j's choice between the
  // UDF0 overload and the untyped (Object, DataType) one, which Spark refuses, varies between JVM runs.
  // A UDF of no arguments is never folded into a literal by the optimizer, as a constant would be.
  private static Column column(Object value, DataType type) {
    UserDefinedFunction function = functions.udf(new HeldNumber(value), type).asNonNullable();
    return function.apply(new Column[0]);
  }

  @Override
  public Object call() {
    return value;
  }
}
