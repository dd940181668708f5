package io.sparklink.spark;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * JSON text written into a growing byte array, the one way {@link VariantText} and {@link JsonEdit} write
 * it: strings escaped as Jackson escapes them ({@code "} and {@code \} with a backslash; control
 * characters as {@code \b \t \n \f \r} or {@code \\u00XX} in upper-case hex; every other byte as is, the
 * input's UTF-8 being valid), integers as {@code Long.toString} writes them. Both must write a value alike
 * to the byte: a sink's record comes out of one or the other.
 */
class JsonOut {
  private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);
  static final byte[] NULL_TEXT = {'n', 'u', 'l', 'l'};
  static final byte[] TRUE_TEXT = {'t', 'r', 'u', 'e'};
  static final byte[] FALSE_TEXT = {'f', 'a', 'l', 's', 'e'};

  byte[] out;
  int size;

  JsonOut(int capacity) {
    out = new byte[Math.max(capacity, 16)];
  }

  /** What was written. */
  byte[] bytes() {
    return Arrays.copyOf(out, size);
  }

  /** An integer in decimal, as Long.toString writes it, without a String on the way. */
  void digits(long n) {
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

  /** {@code length} bytes of UTF-8 text from {@code from} as a quoted JSON string. */
  void quoted(byte[] from, int start, int length) {
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
      escape(b, end - i);
    }
    System.arraycopy(from, run, out, size, end - run);
    size += end - run;
    out[size++] = '"';
  }

  /** Byte {@code b} escaped, with room kept for the {@code left - 1} bytes after it and the closing quote. */
  private void escape(byte b, int left) {
    ensure(left + 6);
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

  /**
   * {@code length} characters as a quoted JSON string, written as {@link #quoted} writes their UTF-8, when
   * all are ASCII (their bytes are the characters); false, with nothing written, otherwise.
   */
  boolean quotedAscii(char[] from, int start, int length) {
    int end = start + length;
    for (int i = start; i < end; i++) {
      if (from[i] >= 0x80) {
        return false;
      }
    }
    ensure(length + 2);
    out[size++] = '"';
    for (int i = start; i < end; i++) {
      char c = from[i];
      if (c >= 0x20 && c != '"' && c != '\\') {
        out[size++] = (byte) c;
      } else {
        escape((byte) c, end - i);
      }
    }
    out[size++] = '"';
    return true;
  }

  void append(byte b) {
    ensure(1);
    out[size++] = b;
  }

  void append(byte[] from, int start, int length) {
    ensure(length);
    System.arraycopy(from, start, out, size, length);
    size += length;
  }

  void append(byte[] from) {
    append(from, 0, from.length);
  }

  private void ensure(int more) {
    if (size + more > out.length) {
      out = Arrays.copyOf(out, Math.max(out.length * 2, size + more));
    }
  }
}
