package io.sparklink.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Where the tokens of JSON text end, found in its bytes without decoding them: what {@link JsonEdit} needs
 * to walk an object's top level without a Jackson parser per value (creating one, its buffers and its
 * skipping of a left-out string were a third of a JSON sink's executor samples, JFR).
 *
 * <p>Each method only says where a token ends; none decides what JSON is valid. The caller reads a token
 * itself only where the bytes leave no doubt (a string without a backslash, a short integer, a literal)
 * and hands every other token's exact range to Jackson, so that what is accepted, and how, stays Jackson's
 * answer. The bytes are known to be valid UTF-8 ({@link Utf8Check}): a byte of a multi-byte character is
 * never a quote, a backslash or a bracket.
 */
final class JsonScan {
  private static final VarHandle WORDS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGH_BITS = 0x8080808080808080L;
  private static final long QUOTES = ONES * '"';
  private static final long BACKSLASHES = ONES * '\\';
  private static final long SPACES = ONES * 0x20;

  /** No end: the text stops inside the token. */
  static final int OPEN = -1;
  /** Not a short integer: no 18 digits make this one. */
  static final long NOT_SHORT = Long.MIN_VALUE;

  private JsonScan() {}

  /** The index of the first byte at or after {@code i} that is not JSON whitespace (space, tab, CR, LF). */
  static int whitespace(byte[] b, int i) {
    while (i < b.length && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) {
      i++;
    }
    return i;
  }

  /**
   * The index of the first byte at or after {@code i} that is a quote, a backslash or a control character
   * (below 0x20), else {@code b.length}: where a string's plain run ends. Eight bytes are tested at a time
   * (each test is exact as a yes or no), and the word that holds one is then read byte by byte.
   */
  static int plainRun(byte[] b, int i) {
    for (; i + Long.BYTES <= b.length; i += Long.BYTES) {
      long w = (long) WORDS.get(b, i);
      long q = w ^ QUOTES;
      long s = w ^ BACKSLASHES;
      long hit = ((q - ONES) & ~q) | ((s - ONES) & ~s) | ((w - SPACES) & ~w);
      if ((hit & HIGH_BITS) != 0) {
        break;
      }
    }
    for (; i < b.length; i++) {
      byte c = b[i];
      if (c == '"' || c == '\\' || (c >= 0 && c < 0x20)) {
        return i;
      }
    }
    return i;
  }

  /**
   * The index just past the closing quote of the string whose opening quote is at {@code i}, passing over
   * each backslash and the byte after it, or {@link #OPEN}. Control characters are left in: whether they
   * are allowed is for the one who reads the string.
   */
  static int stringEnd(byte[] b, int i) {
    i++;
    while (i < b.length) {
      byte c = b[i];
      if (c == '"') {
        return i + 1;
      }
      i += c == '\\' ? 2 : 1;
    }
    return OPEN;
  }

  /**
   * The index just past the bracket that closes the object or array opening at {@code i}, counting
   * brackets outside strings (of either kind: whether they match is for the one who reads it), or
   * {@link #OPEN}, also where it nests deeper than {@code deepest}.
   */
  static int compositeEnd(byte[] b, int i, int deepest) {
    int depth = 0;
    while (i < b.length) {
      byte c = b[i];
      if (c == '"') {
        i = stringEnd(b, i);
        if (i == OPEN) {
          return OPEN;
        }
        continue;
      }
      if (c == '{' || c == '[') {
        if (++depth > deepest) {
          return OPEN;
        }
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      i++;
    }
    return OPEN;
  }

  /** The index of the first byte at or after {@code i} that cannot be part of a number's text. */
  static int numberEnd(byte[] b, int i) {
    while (i < b.length) {
      byte c = b[i];
      if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) {
        break;
      }
      i++;
    }
    return i;
  }

  /**
   * The integer written in {@code b[start, end)} when it is {@code -?(0|[1-9][0-9]*)} with at most 18
   * digits (so it fits a long with no overflow test), else {@link #NOT_SHORT}: a longer one, a fraction,
   * an exponent or a malformed number is for Jackson to read.
   */
  static long shortInteger(byte[] b, int start, int end) {
    int i = start;
    boolean negative = i < end && b[i] == '-';
    if (negative) {
      i++;
    }
    int digits = end - i;
    if (digits < 1 || digits > 18 || (b[i] == '0' && digits > 1)) {
      return NOT_SHORT;
    }
    long n = 0;
    for (; i < end; i++) {
      byte c = b[i];
      if (c < '0' || c > '9') {
        return NOT_SHORT;
      }
      n = n * 10 + (c - '0');
    }
    return negative ? -n : n;
  }

  /** Whether {@code b} holds {@code word} from {@code i}. */
  static boolean holds(byte[] b, int i, byte[] word) {
    if (i + word.length > b.length) {
      return false;
    }
    for (int k = 0; k < word.length; k++) {
      if (b[i + k] != word[k]) {
        return false;
      }
    }
    return true;
  }
}
