package io.sparklink.spark;

import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_object_get(VARIANT obj, STRING name) -> VARIANT}: the value of the
 * object's field {@code name} (a JSON null field as a VARIANT null), NULL where there is no such field or
 * {@code obj} is not an object. JsonConverter reads an envelope's schema and payload with it, and
 * ExtractField and ValueToKey a field.
 *
 * <p>It answers as its SQL form, {@code try_element_at} over the object read as a
 * {@code map<string,variant>}, which copies every field to read one; here the builder's sorted field table is
 * searched for the name and only that value is copied.
 */
public final class ObjectGet implements UDF2<VariantVal, String, VariantVal> {
  private static final long serialVersionUID = 1L;

  @Override
  public VariantVal call(VariantVal obj, String name) {
    Variant object = ObjectFields.object(obj);
    if (object == null || name == null) {
      return null;
    }
    Variant field = object.getFieldByKey(name);
    return field == null ? null : new VariantVal(field.getValue(), field.getMetadata());
  }
}
