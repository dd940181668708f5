package io.sparklink.spark;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * What the SQL functions read from a text argument (a transform's lists, a text edit's spec), read once per
 * text and shared by every copy of the function: the texts are constants, a few per task. Emptied at a
 * bound, so that no caller (a user's SQL step passing a new text per record) can grow it.
 */
final class ReadOnce<T> {
  private static final int KEPT = 256;
  private final ConcurrentHashMap<String, T> read = new ConcurrentHashMap<>();
  private final Function<String, T> reader;

  ReadOnce(Function<String, T> reader) {
    this.reader = reader;
  }

  T of(String text) {
    T known = read.get(text);
    if (known != null) {
      return known;
    }
    T value = reader.apply(text);
    if (read.size() >= KEPT) {
      read.clear();
    }
    read.put(text, value);
    return value;
  }
}
