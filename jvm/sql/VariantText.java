package io.sparklink.spark;

import static org.apache.spark.types.variant.VariantUtil.ARRAY;
import static org.apache.spark.types.variant.VariantUtil.BASIC_TYPE_BITS;
import static org.apache.spark.types.variant.VariantUtil.BASIC_TYPE_MASK;
import static org.apache.spark.types.variant.VariantUtil.FALSE;
import static org.apache.spark.types.variant.VariantUtil.INT1;
import static org.apache.spark.types.variant.VariantUtil.INT8;
import static org.apache.spark.types.variant.VariantUtil.LONG_STR;
import static org.apache.spark.types.variant.VariantUtil.NULL;
import static org.apache.spark.types.variant.VariantUtil.OBJECT;
import static org.apache.spark.types.variant.VariantUtil.PRIMITIVE;
import static org.apache.spark.types.variant.VariantUtil.SHORT_STR;
import static org.apache.spark.types.variant.VariantUtil.TRUE;
import static org.apache.spark.types.variant.VariantUtil.TYPE_INFO_MASK;
import static org.apache.spark.types.variant.VariantUtil.U32_SIZE;

import java.nio.charset.StandardCharsets;
import java.time.ZoneId;
import java.util.Arrays;

import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantUtil;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_variant_text(VARIANT, STRING zone) -> BINARY}: an object or array as
 * the UTF-8 bytes of the JSON text Spark's {@code CAST(v AS STRING)} gives in that session time zone, NULL
 * for anything else (whose cast is cheap and has rules of its own: callers fall back to it). It is how a
 * sink writes a JsonConverter value as text.
 *
 * <p>Spark renders each object key and string through a new Jackson JsonFactory (Variant.escapeJson),
 * about a tenth of a JSON sink's CPU. Here the bytes are written straight from the VARIANT's: keys from
 * its dictionary and strings from its values, neither decoded into Java strings (decoding keys, here and
 * in the object edits, took an eighth of a JSON sink's executor time), escaped as Jackson escapes them
 * ({@code "} and {@code \} with a backslash; control characters as {@code \b \t \n \f \r} or
 * {@code \\u00XX} in upper-case hex; every other byte as is, the VARIANT's UTF-8 being valid).
 * Integers, booleans and null are written directly too ({@link JsonOut}); every other value is Spark's own
 * rendering of it.
 */
public final class VariantText implements UDF2<VariantVal, String, byte[]> {
  private static final long serialVersionUID = 1L;

  @Override
  public byte[] call(VariantVal value, String zone) {
    if (value == null) {
      return null;
    }
    byte[] bytes = value.getValue();
    int basic = bytes[0] & BASIC_TYPE_MASK;
    if (basic != OBJECT && basic != ARRAY) {
      return null; // a scalar: Spark's cast, which the SQL calling this falls back to, renders it
    }
    return text(bytes, value.getMetadata(), zone);
  }

  /** Any value's JSON text, as it is written inside an object or array: what {@link JsonEdit} renders
   * a value with when it is not a string, an integer, a boolean or null. */
  static byte[] text(byte[] value, byte[] metadata, String zone) {
    Writer writer = new Writer(value, metadata, zone);
    writer.write(0);
    return writer.bytes();
  }

  /** One value's text. */
  private static final class Writer extends JsonOut {
    private final byte[] value;
    private final byte[] metadata;
    private final String zone;
    private final int keyOffsetSize;
    private final int keysStart;

    Writer(byte[] value, byte[] metadata, String zone) {
      super(value.length + 16);
      this.value = value;
      this.metadata = metadata;
      this.zone = zone;
      // The dictionary: a header byte, its size, the keys' offsets, then the keys' UTF-8 bytes.
      keyOffsetSize = ((metadata[0] >> 6) & 0x3) + 1;
      int keys = VariantUtil.readUnsigned(metadata, 1, keyOffsetSize);
      keysStart = 1 + (keys + 2) * keyOffsetSize;
    }

    void write(int pos) {
      int basic = value[pos] & BASIC_TYPE_MASK;
      int info = (value[pos] >> BASIC_TYPE_BITS) & TYPE_INFO_MASK;
      switch (basic) {
        case OBJECT -> VariantUtil.handleObject(value, pos, this::object);
        case ARRAY -> VariantUtil.handleArray(value, pos, this::array);
        case SHORT_STR -> quoted(value, pos + 1, info);
        default -> primitive(pos, info);
      }
    }

    private Void object(int n, int idSize, int offsetSize, int idStart, int offsetStart, int dataStart) {
      append((byte) '{');
      for (int i = 0; i < n; i++) {
        if (i > 0) {
          append((byte) ',');
        }
        key(VariantUtil.readUnsigned(value, idStart + idSize * i, idSize));
        append((byte) ':');
        write(dataStart + VariantUtil.readUnsigned(value, offsetStart + offsetSize * i, offsetSize));
      }
      append((byte) '}');
      return null;
    }

    private Void array(int n, int offsetSize, int offsetStart, int dataStart) {
      append((byte) '[');
      for (int i = 0; i < n; i++) {
        if (i > 0) {
          append((byte) ',');
        }
        write(dataStart + VariantUtil.readUnsigned(value, offsetStart + offsetSize * i, offsetSize));
      }
      append((byte) ']');
      return null;
    }

    private void primitive(int pos, int info) {
      if (info == LONG_STR) {
        quoted(value, pos + 1 + U32_SIZE, VariantUtil.readUnsigned(value, pos + 1, U32_SIZE));
      } else if (info == NULL) {
        append(NULL_TEXT);
      } else if (info == TRUE) {
        append(TRUE_TEXT);
      } else if (info == FALSE) {
        append(FALSE_TEXT);
      } else if (info >= INT1 && info <= INT8) {
        digits(VariantUtil.getLong(value, pos));
      } else { // decimals, floating point, dates, times, binary, UUIDs: rare in JSON, and Spark's rules
        byte[] alone = Arrays.copyOfRange(value, pos, pos + VariantUtil.valueSize(value, pos));
        append(new Variant(alone, metadata).toJson(ZoneId.of(zone)).getBytes(StandardCharsets.UTF_8));
      }
    }

    private void key(int id) {
      int start = VariantUtil.readUnsigned(metadata, 1 + (id + 1) * keyOffsetSize, keyOffsetSize);
      int end = VariantUtil.readUnsigned(metadata, 1 + (id + 2) * keyOffsetSize, keyOffsetSize);
      quoted(metadata, keysStart + start, end - start);
    }
  }
}
