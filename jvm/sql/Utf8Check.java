package io.sparklink.spark;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;

/**
 * Whether bytes are valid UTF-8, answered as Spark's {@code try_validate_utf8} answers it, fast.
 *
 * <p>Spark checks each value byte by byte (UTF8String.getIsValid): 13% of an executor's CPU in a JSON
 * sink with three transforms, 1 KiB values. Here a value is first OR-ed eight bytes at a time: no byte
 * with its high bit set means ASCII, which is valid and most values. Only the others go through Java's
 * UTF-8 decoder, which refuses what Spark's check refuses (a cut or lone continuation byte, an overlong
 * form, an encoded surrogate, a code point past U+10FFFF).
 */
final class Utf8Check {
  private static final VarHandle WORDS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long HIGH_BITS = 0x8080808080808080L;

  private Utf8Check() {}

  static boolean valid(byte[] bytes) {
    return ascii(bytes) || decodes(bytes);
  }

  static boolean ascii(byte[] bytes) {
    long seen = 0;
    int i = 0;
    for (; i + Long.BYTES <= bytes.length; i += Long.BYTES) {
      seen |= (long) WORDS.get(bytes, i);
    }
    for (; i < bytes.length; i++) {
      seen |= bytes[i]; // sign-extended: a byte >= 0x80 sets the high bits
    }
    return (seen & HIGH_BITS) == 0;
  }

  private static boolean decodes(byte[] bytes) {
    try {
      StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)); // reports, never replaces
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }
}
