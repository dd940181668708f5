package io.sparklink.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OneRowRelation;
import org.apache.spark.sql.catalyst.plans.physical.UnknownPartitioning;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.LogicalRDD;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;

/**
 * A pipeline's DataFrames, built and analysed once on a streaming query's first micro-batch, moved onto
 * each later batch: the worker's {@code Pipeline.run} (transforms/replay.py).
 *
 * <p>Each {@code selectExpr} of a pipeline is analysed in the JVM as it is built, about ten of them per
 * batch: 0.14 s of the driver's time between two micro-batches of a file sink (bench.sink's chain),
 * while no Spark task runs. A micro-batch that {@code foreachBatch} hands over is a {@code LogicalRDD}
 * whose output attributes (their expression ids) are the streaming query's, the same for every batch of
 * one run, so an analysed plan over the first batch is, with that leaf swapped for the next batch's, the
 * analysed plan over the next: analysis is not run again.
 *
 * <p>The batch may be wrapped in nodes of one child each (the source's observation of its offsets): the
 * whole of {@code first}'s plan is swapped for the whole of {@code next}'s. Refused (null, and the caller
 * builds the batch's plan as before) where the swap could read the wrong data: a leaf outside that plan
 * other than a constant relation (a table, a file, a second copy of the batch under new ids), a
 * subquery, or batches that differ in output or are not one {@code LogicalRDD} each.
 *
 * <p>The first batch need not be a real one: {@link #standIn} makes, before a query starts, a batch of no
 * rows with the columns every micro-batch of a query over the stream will have, so that a sink's
 * pipeline is built and analysed while the query starts rather than on its first batch's clock.
 */
public final class PlanRebase {
  private PlanRebase() {}

  /**
   * {@code template} with {@code first}'s plan swapped for {@code next}'s, or null where refused (above).
   */
  public static Dataset<Row> onto(Dataset<Row> template, Dataset<Row> first, Dataset<Row> next) {
    LogicalPlan from = first.logicalPlan();
    LogicalPlan to = next.logicalPlan();
    if (!from.output().equals(to.output()) || !batchOnly(from) || !batchOnly(to)) {
      return null;
    }
    LogicalPlan swapped = swap(template.logicalPlan(), from, to);
    if (swapped == null) {
      return null;
    }
    swapped.setAnalyzed(); // every node is resolved already; the analyzer would only walk it again
    return Dataset.ofRows(next.sparkSession(), swapped);
  }

  /**
   * An empty batch standing in for the micro-batches of a query over {@code stream}: a {@code LogicalRDD}
   * with the stream's analysed output, whose expression ids each run of such a query gives its batches.
   */
  public static Dataset<Row> standIn(Dataset<Row> stream) {
    SparkSession session = stream.sparkSession();
    LogicalPlan batch =
        new LogicalRDD(
            stream.queryExecution().analyzed().output(),
            session.sparkContext().emptyRDD(ClassTag.apply(InternalRow.class)),
            new UnknownPartitioning(0),
            CollectionConverters.asScala(new ArrayList<SortOrder>()).toList(),
            false,
            Option.empty(),
            session,
            Option.empty(),
            Option.empty());
    return Dataset.ofRows(session, batch);
  }

  /** Whether {@code plan} reads one micro-batch and nothing else (an observation over it, say). */
  private static boolean batchOnly(LogicalPlan plan) {
    if (!plan.subqueries().isEmpty()) {
      return false;
    }
    if (plan.children().isEmpty()) {
      return plan instanceof LogicalRDD;
    }
    return plan.children().size() == 1 && batchOnly(plan.children().head());
  }

  private static LogicalPlan swap(LogicalPlan node, LogicalPlan from, LogicalPlan to) {
    if (node.equals(from)) {
      return to;
    }
    if (!node.subqueries().isEmpty()) {
      return null;
    }
    if (node.children().isEmpty()) {
      // A constant relation reads no batch; any other leaf (the batch under new ids, a table, a file)
      // is not known to be the same data on the next batch.
      return node instanceof LocalRelation || node instanceof OneRowRelation ? node : null;
    }
    List<LogicalPlan> children = new ArrayList<>();
    boolean changed = false;
    for (LogicalPlan child : CollectionConverters.asJava(node.children())) {
      LogicalPlan swapped = swap(child, from, to);
      if (swapped == null) {
        return null;
      }
      changed |= swapped != child;
      children.add(swapped);
    }
    return changed ? node.withNewChildren(CollectionConverters.asScala(children).toSeq()) : node;
  }
}
