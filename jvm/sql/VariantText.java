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
 * Integers, booleans and null are written directly too; every other value is Spark's own rendering of it.
 */
public final class VariantText implements UDF2<VariantVal, String, byte[]> {
  private static final long serialVersionUID = 1L;
  private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] NULL_TEXT = {'n', 'u', 'l', 'l'};
  private static final byte[] TRUE_TEXT = {'t', 'r', 'u', 'e'};
  private static final byte[] FALSE_TEXT = {'f', 'a', 'l', 's', 'e'};

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
    Writer writer = new Writer(bytes, value.getMetadata(), zone);
    writer.write(0);
    return Arrays.copyOf(writer.out, writer.size);
  }

  /** One value's text, written into a growing byte array. */
  private static final class Writer {
    private final byte[] value;
    private final byte[] metadata;
    private final String zone;
    private final int keyOffsetSize;
    private final int keysStart;
    byte[] out;
    int size;

    Writer(byte[] value, byte[] metadata, String zone) {
      this.value = value;
      this.metadata = metadata;
      this.zone = zone;
      // The dictionary: a header byte, its size, the keys' offsets, then the keys' UTF-8 bytes.
      keyOffsetSize = ((metadata[0] >> 6) & 0x3) + 1;
      int keys = VariantUtil.readUnsigned(metadata, 1, keyOffsetSize);
      keysStart = 1 + (keys + 2) * keyOffsetSize;
      out = new byte[value.length + 16];
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
        append(NULL_TEXT, 0, NULL_TEXT.length);
      } else if (info == TRUE) {
        append(TRUE_TEXT, 0, TRUE_TEXT.length);
      } else if (info == FALSE) {
        append(FALSE_TEXT, 0, FALSE_TEXT.length);
      } else if (info >= INT1 && info <= INT8) {
        digits(VariantUtil.getLong(value, pos));
      } else { // decimals, floating point, dates, times, binary, UUIDs: rare in JSON, and Spark's rules
        byte[] alone = Arrays.copyOfRange(value, pos, pos + VariantUtil.valueSize(value, pos));
        byte[] text = new Variant(alone, metadata).toJson(ZoneId.of(zone)).getBytes(StandardCharsets.UTF_8);
        append(text, 0, text.length);
      }
    }

    /** An integer in decimal, as Long.toString writes it, without a String on the way. */
    private void digits(long n) {
      if (n == Long.MIN_VALUE) { // the one value whose negation does not fit
        byte[] text = Long.toString(n).getBytes(StandardCharsets.US_ASCII);
        append(text, 0, text.length);
        return;
      }
      ensure(20);
      if (n < 0) {
        out[size++] = '-';
        n = -n;
      }
      int first = size;
      do {
        out[size++] = (byte) ('0' + n % 10);
        n /= 10;
      } while (n != 0);
      for (int i = first, j = size - 1; i < j; i++, j--) { // written lowest digit first
        byte b = out[i];
        out[i] = out[j];
        out[j] = b;
      }
    }

    private void key(int id) {
      int start = VariantUtil.readUnsigned(metadata, 1 + (id + 1) * keyOffsetSize, keyOffsetSize);
      int end = VariantUtil.readUnsigned(metadata, 1 + (id + 2) * keyOffsetSize, keyOffsetSize);
      quoted(metadata, keysStart + start, end - start);
    }

    private void quoted(byte[] from, int start, int length) {
      ensure(length + 2);
      out[size++] = '"';
      int end = start + length;
      int run = start; // the first byte not yet written: bytes needing no escape go in runs
      for (int i = start; i < end; i++) {
        byte b = from[i];
        if ((b >= 0x20 || b < 0) && b != '"' && b != '\\') { // a byte of a multi-byte character is negative
          continue;
        }
        System.arraycopy(from, run, out, size, i - run);
        size += i - run;
        run = i + 1;
        ensure(end - i + 6); // this byte's escape, the rest unescaped, the closing quote
        out[size++] = '\\';
        switch (b) {
          case '"', '\\' -> out[size++] = b;
          case '\b' -> out[size++] = 'b';
          case '\t' -> out[size++] = 't';
          case '\n' -> out[size++] = 'n';
          case '\f' -> out[size++] = 'f';
          case '\r' -> out[size++] = 'r';
          default -> {
            out[size++] = 'u';
            out[size++] = '0';
            out[size++] = '0';
            out[size++] = HEX[b >> 4];
            out[size++] = HEX[b & 0xF];
          }
        }
      }
      System.arraycopy(from, run, out, size, end - run);
      size += end - run;
      out[size++] = '"';
    }

    private void append(byte b) {
      ensure(1);
      out[size++] = b;
    }

    private void append(byte[] from, int start, int length) {
      ensure(length);
      System.arraycopy(from, start, out, size, length);
      size += length;
    }

    private void ensure(int more) {
      if (size + more > out.length) {
        out = Arrays.copyOf(out, Math.max(out.length * 2, size + more));
      }
    }
  }
}
