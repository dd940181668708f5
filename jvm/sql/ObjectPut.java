package io.sparklink.spark;

import org.apache.spark.sql.api.java.UDF3;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.Variant.ObjectField;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_object_put(VARIANT obj, STRING name, VARIANT value) -> VARIANT}: the
 * object with {@code name} set to {@code value} (replacing a field of that name), NULL where {@code obj} is
 * not an object. InsertField writes each field with it.
 *
 * <p>It answers as its SQL form, {@code to_variant_object(map_concat(map_filter(...), map(name, value)))}
 * over the object read as a {@code map<string,variant>}; Spark evaluates those map functions without code
 * generation and converts the whole object twice: bench.transforms' three transforms cost a JSON sink
 * about as much again as everything else it did per record.
 */
public final class ObjectPut implements UDF3<VariantVal, String, VariantVal, VariantVal> {
  private static final long serialVersionUID = 1L;

  @Override
  public VariantVal call(VariantVal obj, String name, VariantVal value) {
    Variant object = ObjectFields.object(obj);
    if (object == null || name == null) {
      return null;
    }
    int size = object.objectSize();
    ObjectFields out = new ObjectFields(size + 1);
    for (int i = 0; i < size; i++) {
      ObjectField field = object.getFieldAtIndex(i);
      if (!field.key.equals(name)) {
        out.put(field.key, field.value);
      }
    }
    out.put(name, value == null ? null : new Variant(value.getValue(), value.getMetadata()));
    return out.finish();
  }
}
