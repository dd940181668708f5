package io.sparklink.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@link JsonEdit}'s reading of the object most records hold: flat, its names and strings free of escapes,
 * its numbers integers, its values otherwise {@code true}, {@code false} or {@code null}. Such an object's
 * fields are read here without a Jackson parser, whose creation and byte-by-byte pass over a left-out
 * string (bench.sink's 1 KiB payload) were half of the edit's time (JFR). Anything else, including
 * anything Jackson would refuse, is left to the Jackson reading ({@code read} answers false), so what this
 * accepts is a subset of what Jackson accepts, read as Jackson reads it.
 */
final class FlatJson {
  private static final VarHandle WORDS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGH_BITS = 0x8080808080808080L;
  private static final long QUOTES = ONES * '"';
  private static final long BACKSLASHES = ONES * '\\';
  private static final long SPACES = ONES * 0x20;
  /** Longer names go to Jackson, which has a limit of its own for them. */
  private static final int MAX_NAME = 1000;
  /** Integers of more digits go to Jackson: up to 18, any fits a long. */
  private static final int MAX_DIGITS = 18;
  private static final int NAMES = 64;

  /** A name and its UTF-8, one object so that a slot is read whole. */
  private record Name(byte[] bytes, String name) {}

  // The names met last, by a hash of their bytes: a task's values share a few, decoded once.
  private final Name[] names = new Name[NAMES];

  /**
   * Reads the object in {@code b} into {@code fields} (each value's JSON text appended to {@code values}),
   * leaving out the fields named in {@code skip}; false, with what was added to be thrown away, where the
   * object is not one this reads. A name met twice is found later, by the caller's sort, except a left-out
   * one: false then too.
   */
  boolean read(byte[] b, List<String> skip, ArrayList<JsonEdit.Field> fields, JsonOut values) {
    int n = b.length;
    int i = ws(b, 0);
    if (i >= n || b[i] != '{') {
      return false;
    }
    i = ws(b, i + 1);
    if (i < n && b[i] == '}') {
      return ws(b, i + 1) == n;
    }
    long skipped = 0; // the left-out names met, by their place in `skip`
    while (true) {
      if (i >= n || b[i] != '"') {
        return false;
      }
      int nameEnd = plainStringEnd(b, i + 1);
      if (nameEnd < 0 || nameEnd - i - 1 > MAX_NAME) {
        return false;
      }
      String name = name(b, i + 1, nameEnd);
      i = ws(b, nameEnd + 1);
      if (i >= n || b[i] != ':') {
        return false;
      }
      i = ws(b, i + 1);
      int end = scalarEnd(b, i);
      if (end < 0) {
        return false;
      }
      int left = skip.indexOf(name);
      if (left < 0) {
        int start = values.size;
        if (b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) {
          values.digits(integer(b, i, end)); // as a long is written: -0 as 0
        } else {
          values.append(b, i, end - i); // a string free of escapes, or a literal: as it is
        }
        fields.add(new JsonEdit.Field(name, start, values.size));
      } else if (left >= Long.SIZE || (skipped & (1L << left)) != 0) {
        return false;
      } else {
        skipped |= 1L << left;
      }
      i = ws(b, end);
      if (i >= n) {
        return false;
      }
      if (b[i] == '}') {
        return ws(b, i + 1) == n;
      }
      if (b[i] != ',') {
        return false;
      }
      i = ws(b, i + 1);
    }
  }

  /** Past the whitespace JSON allows (and Jackson: space, tab, line feed, carriage return) from {@code i}. */
  private static int ws(byte[] b, int i) {
    while (i < b.length && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) {
      i++;
    }
    return i;
  }

  /**
   * Where the string whose text starts at {@code i} ends (its closing quote), if its text holds no escape
   * and no control character; -1 otherwise. Eight bytes at a time while none is a quote, a backslash or
   * below 0x20 (the bytes of a multi-byte character, 0x80 and up, never look like any).
   */
  private static int plainStringEnd(byte[] b, int i) {
    for (; i + Long.BYTES <= b.length; i += Long.BYTES) {
      long w = (long) WORDS.get(b, i);
      if ((zeroByte(w ^ QUOTES) | zeroByte(w ^ BACKSLASHES) | ((w - SPACES) & ~w & HIGH_BITS)) != 0) {
        break;
      }
    }
    for (; i < b.length; i++) {
      byte c = b[i];
      if (c == '"') {
        return i;
      }
      if (c == '\\' || (c >= 0 && c < 0x20)) {
        return -1;
      }
    }
    return -1;
  }

  /** Not zero where some byte of {@code w} is zero (exact as a whole; which byte is not told). */
  private static long zeroByte(long w) {
    return (w - ONES) & ~w & HIGH_BITS;
  }

  /** The end of the string, integer or literal at {@code i}; -1 for anything else (left to Jackson). */
  private static int scalarEnd(byte[] b, int i) {
    if (i >= b.length) {
      return -1;
    }
    byte c = b[i];
    if (c == '"') {
      int end = plainStringEnd(b, i + 1);
      return end < 0 ? -1 : end + 1;
    }
    if (c == 't') {
      return literal(b, i, "true");
    }
    if (c == 'f') {
      return literal(b, i, "false");
    }
    if (c == 'n') {
      return literal(b, i, "null");
    }
    int j = c == '-' ? i + 1 : i;
    int first = j;
    while (j < b.length && b[j] >= '0' && b[j] <= '9') {
      j++;
    }
    int digits = j - first;
    if (digits == 0 || digits > MAX_DIGITS || (digits > 1 && b[first] == '0')) {
      return -1; // not a number, too long, or a leading zero (which Jackson refuses)
    }
    if (j < b.length && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
      return -1; // a fraction or an exponent: Spark's builder decides between decimal and double
    }
    return j;
  }

  private static int literal(byte[] b, int i, String word) {
    int end = i + word.length();
    if (end > b.length) {
      return -1;
    }
    for (int k = 0; k < word.length(); k++) {
      if (b[i + k] != word.charAt(k)) {
        return -1;
      }
    }
    return end;
  }

  /** The integer of at most {@link #MAX_DIGITS} digits, maybe signed, between {@code i} and {@code end}. */
  private static long integer(byte[] b, int i, int end) {
    boolean negative = b[i] == '-';
    long n = 0;
    for (int k = negative ? i + 1 : i; k < end; k++) {
      n = n * 10 + (b[k] - '0');
    }
    return negative ? -n : n;
  }

  /** The name whose UTF-8 (valid, free of escapes) lies between {@code start} and {@code end}. */
  private String name(byte[] b, int start, int end) {
    int h = 0;
    for (int k = start; k < end; k++) {
      h = 31 * h + b[k];
    }
    int slot = (h ^ (h >>> 16)) & (NAMES - 1);
    Name known = names[slot];
    if (known != null && Arrays.equals(known.bytes, 0, known.bytes.length, b, start, end)) {
      return known.name;
    }
    String name = new String(b, start, end - start, StandardCharsets.UTF_8);
    names[slot] = new Name(Arrays.copyOfRange(b, start, end), name);
    return name;
  }
}
