package io.sparklink.spark;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.filter.FilteringParserDelegate;
import com.fasterxml.jackson.core.filter.TokenFilter;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_json_variant(BINARY) -> VARIANT}: JSON bytes parsed into a VARIANT, or
 * NULL where they are not valid UTF-8 ({@link Utf8Check}) or not JSON. It answers as Spark's
 * {@code try_parse_json(try_validate_utf8(CAST(bytes AS STRING)))}, with Spark's own VARIANT builder;
 * JsonConverter reads every sink record's key or value through it.
 *
 * <p>Spark's function decodes the bytes into a Java String first and creates a new Jackson JsonFactory for
 * every value (its symbol tables too): that was the largest single cost of a JSON sink after the parse.
 * Here one factory serves every value and Jackson reads the bytes themselves. Without our jar the worker
 * defines the same name in SQL as Spark's functions.
 */
public final class JsonVariant implements UDF1<byte[], VariantVal> {
  private static final long serialVersionUID = 1L;
  // Shared by every value (a factory is thread-safe once built). Jackson reads UTF-8 bytes directly only
  // while it keeps field names in its table; without the table it decodes them through a Reader, which
  // took a fifth longer per value (a loop parsing bench.sink's 1 KiB values: 1.47 against 1.20 us each
  // once compiled, 3.3 against 1.8 us before). The table is shared by the values, so: it stays bounded
  // (Jackson starts it afresh past 6,000 names), its names are never String.intern()ed, and names whose
  // hashes collide, in one value or across many, slow a parse rather than fail a valid value.
  static final JsonFactory JSON =
      new JsonFactoryBuilder()
          .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
          .disable(JsonFactory.Feature.FAIL_ON_SYMBOL_HASH_OVERFLOW)
          .build();

  @Override
  public VariantVal call(byte[] bytes) {
    return parse(bytes, null);
  }

  /**
   * The parse itself, which {@link JsonVariantWithout} shares: {@code skipping} (a Jackson filter, or null
   * for none) wraps the byte parser, whose names are then checked for duplicates by Jackson too, as a
   * skipped field's never reach Spark's builder.
   */
  static VariantVal parse(byte[] bytes, TokenFilter skipping) {
    if (bytes == null || !Utf8Check.valid(bytes)) {
      return null;
    }
    try (JsonParser raw = JSON.createParser(bytes)) {
      JsonParser parser = raw;
      if (skipping != null) {
        raw.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
        // The object around the kept fields is kept too.
        parser = new FilteringParserDelegate(raw, skipping, TokenFilter.Inclusion.INCLUDE_ALL_AND_PATH, true);
      }
      parser.nextToken();
      Variant parsed = VariantBuilder.parseJson(parser, false, false);
      return new VariantVal(parsed.getValue(), parsed.getMetadata());
    } catch (Exception e) { // malformed JSON, a duplicate key, a value past the VARIANT size limit
      return null;
    }
  }
}
