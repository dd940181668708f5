package io.sparklink.spark;

import java.util.List;

import com.fasterxml.jackson.core.filter.TokenFilter;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_json_variant_without(BINARY, STRING lists) -> VARIANT}: JSON bytes
 * parsed as {@link JsonVariant} parses them, except that a top-level object's fields named in the exclude
 * list of {@code lists} (the text {@link ObjectSelect} reads, and read as it reads it) are skipped rather
 * than built. JsonConverter parses a sink record's value with it when the transforms after it drop those
 * fields unread (ReplaceField excluding a large payload): Jackson then passes over their text without
 * decoding it, and no later edit copies it again.
 *
 * <p>The answer is NULL exactly where {@link JsonVariant}'s is: a skipped field is still checked as JSON,
 * and names are checked for duplicates at every level (as Spark's builder does for the fields it builds).
 * Only the top level is filtered: an array, a scalar and every nested object come out whole.
 */
public final class JsonVariantWithout implements UDF2<byte[], String, VariantVal> {
  private static final long serialVersionUID = 1L;

  /** Keeps every top-level field but the excluded ones, and everything below them whole. */
  private static final class TopLevel extends TokenFilter {
    private final List<String> excluded;

    TopLevel(List<String> excluded) {
      this.excluded = excluded;
    }

    @Override
    public TokenFilter includeProperty(String name) {
      return excluded.contains(name) ? null : TokenFilter.INCLUDE_ALL;
    }

    @Override
    public TokenFilter filterStartArray() {
      return TokenFilter.INCLUDE_ALL; // a top-level array is not an object: nothing in it is skipped
    }

    @Override
    public boolean includeEmptyObject(boolean contentsFiltered) {
      return true; // an object whose every field was skipped is still an object
    }
  }

  private transient ObjectSelect.Seen last;

  @Override
  public VariantVal call(byte[] bytes, String lists) {
    if (lists == null) {
      return null;
    }
    ObjectSelect.Seen seen = last = ObjectSelect.Seen.of(last, lists);
    ObjectSelect.Lists names = seen.lists();
    if (names == ObjectSelect.MALFORMED) {
      return null;
    }
    return JsonVariant.parse(bytes, names.exclude().isEmpty() ? null : new TopLevel(names.exclude()));
  }
}
