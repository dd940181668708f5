package io.sparklink.spark;

import java.util.ArrayList;

import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.types.variant.VariantBuilder.FieldEntry;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * A new VARIANT object written field by field with Spark's builder: what {@link ObjectPut} and
 * {@link ObjectSelect} share. A name written twice keeps the value written last, as Connect's maps (and the
 * session's {@code spark.sql.mapKeyDedupPolicy=LAST_WIN}) keep the last value put; the builder sorts the
 * fields by name, as every VARIANT object holds them.
 */
final class ObjectFields {
  private final VariantBuilder builder = new VariantBuilder(true);
  private final int start = builder.getWritePos();
  private final ArrayList<FieldEntry> fields;

  ObjectFields(int expected) {
    fields = new ArrayList<>(expected);
  }

  /** The value as a Variant when it holds an object; null for SQL NULL and any other value. */
  static Variant object(VariantVal value) {
    if (value == null) {
      return null;
    }
    Variant v = new Variant(value.getValue(), value.getMetadata());
    return v.getType() == VariantUtil.Type.OBJECT ? v : null;
  }

  /** Writes a field; a null value is JSON null (a SQL NULL put in a map<string,variant>). */
  void put(String name, Variant value) {
    fields.add(new FieldEntry(name, builder.addKey(name), builder.getWritePos() - start));
    if (value == null) {
      builder.appendNull();
    } else {
      builder.appendVariant(value); // a deep copy: its keys move to the new object's dictionary
    }
  }

  /**
   * The object. Past the VARIANT size limit the builder throws, as Spark's {@code to_variant_object} did in
   * the map round trip this replaces: a NULL here would silently turn that record's value into Connect null.
   */
  VariantVal finish() {
    builder.finishWritingObject(start, fields);
    Variant done = builder.result();
    return new VariantVal(done.getValue(), done.getMetadata());
  }
}
