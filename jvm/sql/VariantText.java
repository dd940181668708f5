package io.sparklink.spark;

import java.time.ZoneId;

import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.Variant.ObjectField;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_variant_text(VARIANT, STRING zone) -> STRING}: an object or array as
 * the JSON text Spark's {@code CAST(v AS STRING)} gives in that session time zone, NULL for anything else
 * (whose cast is cheap and has rules of its own: callers fall back to it). It is how a sink writes a
 * JsonConverter value as text.
 *
 * <p>Spark renders each object key and string through a new Jackson JsonFactory (Variant.escapeJson),
 * about a tenth of a JSON sink's CPU. Here objects, arrays and strings are written directly, escaped as
 * Jackson escapes them ({@code "} and {@code \} with a backslash; control characters as {@code \b \t \n
 * \f \r} or {@code \\u00XX} in upper-case hex; everything else as is); every other value is Spark's own
 * rendering of it.
 */
public final class VariantText implements UDF2<VariantVal, String, String> {
  private static final long serialVersionUID = 1L;
  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  @Override
  public String call(VariantVal value, String zone) {
    if (value == null) {
      return null;
    }
    Variant v = new Variant(value.getValue(), value.getMetadata());
    switch (v.getType()) {
      case OBJECT:
      case ARRAY:
        StringBuilder out = new StringBuilder(value.getValue().length + 16);
        write(v, ZoneId.of(zone), out);
        return out.toString();
      default:
        return null; // a scalar: Spark's cast, which the SQL calling this falls back to, renders it
    }
  }

  private static void write(Variant v, ZoneId zone, StringBuilder out) {
    switch (v.getType()) {
      case OBJECT:
        out.append('{');
        for (int i = 0, n = v.objectSize(); i < n; i++) {
          ObjectField field = v.getFieldAtIndex(i);
          if (i > 0) {
            out.append(',');
          }
          quoted(field.key, out);
          out.append(':');
          write(field.value, zone, out);
        }
        out.append('}');
        break;
      case ARRAY:
        out.append('[');
        for (int i = 0, n = v.arraySize(); i < n; i++) {
          if (i > 0) {
            out.append(',');
          }
          write(v.getElementAtIndex(i), zone, out);
        }
        out.append(']');
        break;
      case STRING:
        quoted(v.getString(), out);
        break;
      default:
        out.append(v.toJson(zone));
    }
  }

  private static void quoted(String text, StringBuilder out) {
    out.append('"');
    for (int i = 0, n = text.length(); i < n; i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c >= 0x20) {
        out.append(c);
      } else {
        switch (c) {
          case '\b': out.append("\\b"); break;
          case '\t': out.append("\\t"); break;
          case '\n': out.append("\\n"); break;
          case '\f': out.append("\\f"); break;
          case '\r': out.append("\\r"); break;
          default: out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xF]);
        }
      }
    }
    out.append('"');
  }
}
