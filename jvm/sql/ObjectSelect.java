package io.sparklink.spark;

import org.apache.spark.sql.api.java.UDF5;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.Variant.ObjectField;
import org.apache.spark.unsafe.types.VariantVal;
import scala.collection.Seq;

/**
 * The SQL function {@code sparklink_object_select(VARIANT obj, ARRAY<STRING> exclude, ARRAY<STRING>
 * include, ARRAY<STRING> renamed_from, ARRAY<STRING> renamed_to) -> VARIANT}: the object's fields not in
 * {@code exclude} and, when {@code include} is not empty, in it, each renamed where it is in
 * {@code renamed_from} (to the name at the same place in {@code renamed_to}); NULL where {@code obj} is not
 * an object. ReplaceField's edit of a schemaless value or a schema'd payload.
 *
 * <p>It answers as its SQL form ({@code map_filter} and {@code transform_keys} over the object as a
 * {@code map<string,variant>}), without converting the object to a map and back. The lists are a
 * transform's configuration, a few names: a linear search beats building a set for every record.
 */
public final class ObjectSelect
    implements UDF5<VariantVal, Seq<String>, Seq<String>, Seq<String>, Seq<String>, VariantVal> {
  private static final long serialVersionUID = 1L;

  @Override
  public VariantVal call(
      VariantVal obj, Seq<String> exclude, Seq<String> include, Seq<String> renamedFrom, Seq<String> renamedTo) {
    Variant object = ObjectFields.object(obj);
    // The lists are never NULL in the SQL transforms write; a user's SQL step could pass one.
    if (object == null || exclude == null || include == null || renamedFrom == null || renamedTo == null) {
      return null;
    }
    int size = object.objectSize();
    ObjectFields out = new ObjectFields(size);
    for (int i = 0; i < size; i++) {
      ObjectField field = object.getFieldAtIndex(i);
      if (exclude.contains(field.key) || (!include.isEmpty() && !include.contains(field.key))) {
        continue;
      }
      int renamed = renamedFrom.indexOf(field.key);
      String name = renamed < 0 || renamed >= renamedTo.size() ? field.key : renamedTo.apply(renamed);
      out.put(name == null ? field.key : name, field.value);
    }
    return out.finish();
  }
}
