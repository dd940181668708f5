package io.sparklink.spark;

import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_object_size(VARIANT obj) -> INT}: how many fields the object has, NULL
 * where {@code obj} is not an object; JsonConverter's check that an envelope holds exactly a schema and a
 * payload. Its SQL form, {@code size} of the object read as a {@code map<string,variant>}, copies every field.
 */
public final class ObjectSize implements UDF1<VariantVal, Integer> {
  private static final long serialVersionUID = 1L;

  @Override
  public Integer call(VariantVal obj) {
    Variant object = ObjectFields.object(obj);
    return object == null ? null : object.objectSize();
  }
}
