package io.sparklink.connect.bridge;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * What Python (Py4J, on the driver) calls to reach the Connect host: the host object itself, a source task's
 * long-running Spark job, and a sink task's micro-batch. Lives in Spark's class loader (spark.jars) and knows
 * the host only through reflection and JDK types, so the two class paths stay apart.
 */
public final class Bridge {
    private Bridge() {
    }

    /** The Connect host of this JVM for the given class path (see HostLoader). */
    public static Object host(String classPath) {
        return HostLoader.host(classPath);
    }

    /** Start a source task as one long-running Spark task of a job of its own (see SourceJob). */
    public static SourceJob startSource(SparkContext sc, String classPath, String spec, String name) {
        return SourceJob.start(sc, classPath, spec, name);
    }

    /**
     * Hand one micro-batch read by Spark's Kafka source (with headers) to a sink task host, in the JVM: the
     * rows are collected to the driver and passed as JDK values; returns the host's JSON answer.
     */
    public static String putBatch(Dataset<Row> batch, Object sinkHost) throws Throwable {
        StructType schema = batch.schema();
        int topic = schema.fieldIndex("topic");
        int partition = schema.fieldIndex("partition");
        int offset = schema.fieldIndex("offset");
        int timestamp = schema.fieldIndex("timestamp");
        int timestampType = schema.fieldIndex("timestampType");
        int key = schema.fieldIndex("key");
        int value = schema.fieldIndex("value");
        int headers = schema.fieldIndex("headers");
        List<Row> rows = batch.collectAsList();
        List<Object[]> records = new ArrayList<>(rows.size());
        for (Row row : rows) {
            records.add(new Object[] {
                row.getString(topic), row.getInt(partition), row.getLong(offset), millis(row.get(timestamp)),
                row.isNullAt(timestampType) ? null : row.getInt(timestampType), row.get(key), row.get(value),
                headers(row, headers)
            });
        }
        return (String) invoke(sinkHost, "put", new Class<?>[] {Iterator.class}, records.iterator());
    }

    private static Long millis(Object timestamp) {
        if (timestamp instanceof Timestamp ts) {
            return ts.getTime();
        }
        if (timestamp instanceof Instant instant) {
            return instant.toEpochMilli();
        }
        return null;
    }

    private static List<Object[]> headers(Row row, int index) {
        if (row.isNullAt(index)) {
            return null;
        }
        List<Object[]> out = new ArrayList<>();
        for (Row header : row.<Row>getList(index)) {
            out.add(new Object[] {header.getString(0), header.get(1)});
        }
        return out;
    }

    static Object invoke(Object target, String method, Class<?>[] types, Object... args) throws Throwable {
        Method found = target.getClass().getMethod(method, types);
        try {
            return found.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
