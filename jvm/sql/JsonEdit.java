package io.sparklink.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.VariantBuilder;

/**
 * The SQL function {@code sparklink_json_edit(BINARY json, STRING spec) -> BINARY}: a JSON object's text
 * after a chain's edits of its top-level fields, straight from the record's bytes, where JsonConverter,
 * InsertField and ReplaceField would otherwise build a VARIANT, rebuild it for each edit and render it
 * for the sink (about three fifths of a JSON sink's executor time with bench.sink's chain, JFR).
 *
 * <p>It answers with the same bytes as that path ({@link JsonVariant} or {@link JsonVariantWithout}, then
 * {@link ObjectPut} and {@link ObjectSelect} for each edit, then {@link VariantText}), or NULL where it
 * cannot promise to: the value is not an object, not valid UTF-8 or JSON, has a duplicate name, goes on
 * after the object, is over {@link #LIMIT} bytes, nests deeper than {@link #DEEPEST} levels, or an edit
 * would give two fields one name. The caller then takes the VARIANT path for that record, which decides
 * what it is (an error, Connect null, ...). Fields come out sorted by name, as a VARIANT object holds them.
 * The object's top level is walked in its bytes ({@link JsonScan}): a string without escapes, a short
 * integer or a literal is written from its bytes, and any other value (an escaped string, a number with
 * a fraction, a nested object or array) is read by Jackson from its own bytes alone, a nested one built
 * as a VARIANT and rendered as {@link VariantText} renders it. With bench.sink's chain and 1 KiB values
 * a call took 0.53 us where a Jackson parser over the whole value took 0.78 us (a loop, once compiled),
 * and a fresh worker's first sink of 1M records spent 7.3-7.6 CPU s against 8.0-8.1.
 *
 * <p>{@code spec}, a constant the pipeline writes once per task, says which fields are left out unread and
 * what the edits are ({@link JsonEditSpec}).
 */
public final class JsonEdit implements UDF2<byte[], String, byte[]> {
  private static final long serialVersionUID = 1L;
  /** Larger values take the VARIANT path: it alone knows where Spark's VARIANT size limit falls. */
  static final int LIMIT = 1 << 20;

  private static final int NAMES_KEPT = 256;
  /** Values nested deeper go to the VARIANT path: Jackson's limit (1,000) counts from the top level. */
  private static final int DEEPEST = 500;
  /** Longer names go to the VARIANT path: Jackson refuses a name of over 50,000 characters. */
  private static final int LONGEST_NAME = 50_000;

  /** One field of the object being edited: its name and where its value's JSON text lies in the values. */
  record Field(String name, int start, int end) implements Comparable<Field> {
    @Override
    public int compareTo(Field other) {
      return name.compareTo(other.name); // as Spark's builder orders an object's fields
    }
  }

  /** A spec's text and the spec: what this copy of the function read last, one object read whole. */
  private record Seen(String text, JsonEditSpec spec) {}

  private transient Seen last;
  /** Each name's quoted UTF-8, written once: a task's values share a few names (bounded all the same). */
  private transient ConcurrentHashMap<String, byte[]> quotedNames;

  @Override
  public byte[] call(byte[] bytes, String specText) {
    if (bytes == null || specText == null || bytes.length > LIMIT) {
      return null;
    }
    Seen seen = last;
    if (seen == null || !seen.text.equals(specText)) { // the same constant for every record of a task
      seen = last = new Seen(specText, JsonEditSpec.of(specText));
    }
    JsonEditSpec spec = seen.spec;
    if (spec == JsonEditSpec.MALFORMED || !Utf8Check.valid(bytes)) {
      return null;
    }
    ArrayList<Field> fields = new ArrayList<>(16);
    JsonOut values = new JsonOut(Math.min(bytes.length, 512)); // every field's value, one after another
    if (!read(bytes, spec.skip(), fields, values)) {
      return null;
    }
    if (!sortedWithoutDuplicates(fields)) {
      return null;
    }
    for (JsonEditSpec.Edit edit : spec.edits()) {
      fields =
          edit instanceof JsonEditSpec.Put put
              ? put(fields, put, values)
              : select(fields, ((JsonEditSpec.Select) edit).lists());
      if (fields == null) {
        return null;
      }
    }
    JsonOut out = new JsonOut(values.size + 16 * fields.size() + 2);
    out.append((byte) '{');
    for (int i = 0; i < fields.size(); i++) {
      if (i > 0) {
        out.append((byte) ',');
      }
      Field field = fields.get(i);
      out.append(quotedName(field.name));
      out.append((byte) ':');
      out.append(values.out, field.start, field.end - field.start);
    }
    out.append((byte) '}');
    return out.bytes();
  }

  /**
   * Reads the object in {@code b}: each field's name, and its value's JSON text appended to {@code
   * values}; false where the VARIANT path must decide (not an object, malformed, a duplicate name, ...).
   * The top level is walked here ({@link JsonScan}); a token that is not plain (a string with an escape,
   * a fraction, a nested object or array) is read by Jackson alone, from its own bytes ({@link #parsed}).
   * A name is checked for duplicates here at the top level and by Spark's builder below it.
   */
  private static boolean read(byte[] b, List<String> skip, ArrayList<Field> fields, JsonOut values) {
    try {
      int i = JsonScan.whitespace(b, startsWithByteOrderMark(b) ? 3 : 0); // Jackson passes over the mark
      if (i >= b.length || b[i] != '{') {
        return false;
      }
      i = JsonScan.whitespace(b, i + 1);
      if (i < b.length && b[i] == '}') {
        return JsonScan.whitespace(b, i + 1) == b.length;
      }
      boolean[] skipped = null; // which left-out names were met: one met twice is a duplicate too
      while (i < b.length && b[i] == '"') {
        int end = JsonScan.plainRun(b, i + 1);
        String name;
        if (end < b.length && b[end] == '"') {
          name = new String(b, i + 1, end - i - 1, StandardCharsets.UTF_8);
          end++;
        } else if ((end = JsonScan.stringEnd(b, i)) != JsonScan.OPEN) {
          name = escaped(b, i, end);
        } else {
          return false;
        }
        if (end - i > LONGEST_NAME) {
          return false;
        }
        i = JsonScan.whitespace(b, end);
        if (i >= b.length || b[i] != ':') {
          return false;
        }
        i = JsonScan.whitespace(b, i + 1);
        int left = skip.indexOf(name);
        if (left >= 0) {
          skipped = skipped == null ? new boolean[skip.size()] : skipped;
          if (skipped[left]) {
            return false;
          }
          skipped[left] = true;
        }
        int start = values.size;
        // Left out, a value is still read as the VARIANT path reads it: a fault in it is an error there.
        i = value(b, i, left < 0 ? values : null);
        if (i == JsonScan.OPEN) {
          return false;
        }
        if (left < 0) {
          fields.add(new Field(name, start, values.size));
        }
        i = JsonScan.whitespace(b, i);
        if (i < b.length && b[i] == '}') {
          return JsonScan.whitespace(b, i + 1) == b.length; // nothing but whitespace after the object
        }
        if (i >= b.length || b[i] != ',') {
          return false;
        }
        i = JsonScan.whitespace(b, i + 1);
      }
      return false; // a name was due
    } catch (IOException | RuntimeException e) { // malformed, past a limit of Jackson's
      return false;
    }
  }

  private static boolean startsWithByteOrderMark(byte[] b) {
    return b.length >= 3 && b[0] == (byte) 0xEF && b[1] == (byte) 0xBB && b[2] == (byte) 0xBF;
  }

  /**
   * Reads the value starting at {@code i}, its JSON text appended to {@code out} (null: read only); the
   * index just past it, or {@link JsonScan#OPEN} where the text breaks off.
   */
  private static int value(byte[] b, int i, JsonOut out) throws IOException {
    if (i >= b.length) {
      return JsonScan.OPEN;
    }
    int end;
    switch (b[i]) {
      case '"' -> {
        end = JsonScan.plainRun(b, i + 1);
        if (end < b.length && b[end] == '"') { // no escape, no control character: its bytes are its text
          if (out != null) {
            out.append(b, i, end + 1 - i);
          }
          return end + 1;
        }
        end = JsonScan.stringEnd(b, i);
      }
      case '{', '[' -> end = JsonScan.compositeEnd(b, i, DEEPEST);
      case 't' -> {
        return literal(b, i, JsonOut.TRUE_TEXT, out);
      }
      case 'f' -> {
        return literal(b, i, JsonOut.FALSE_TEXT, out);
      }
      case 'n' -> {
        return literal(b, i, JsonOut.NULL_TEXT, out);
      }
      default -> {
        end = JsonScan.numberEnd(b, i);
        long n = JsonScan.shortInteger(b, i, end);
        if (n != JsonScan.NOT_SHORT) {
          if (out != null) {
            out.digits(n);
          }
          return end;
        }
      }
    }
    if (end == JsonScan.OPEN || end == i) {
      return JsonScan.OPEN;
    }
    parsed(b, i, end, out);
    return end;
  }

  private static int literal(byte[] b, int i, byte[] word, JsonOut out) {
    if (!JsonScan.holds(b, i, word)) {
      return JsonScan.OPEN;
    }
    if (out != null) {
      out.append(word);
    }
    return i + word.length;
  }

  /**
   * Jackson reads the one value in {@code b[start, end)} and its text is appended to {@code out} as the
   * VARIANT path writes it (null: read only, as the VARIANT path reads it); a fault throws.
   */
  private static void parsed(byte[] b, int start, int end, JsonOut out) throws IOException {
    try (JsonParser parser = JsonVariant.JSON.createParser(b, start, end - start)) {
      JsonToken token = parser.nextToken();
      if (token == null) {
        throw new IOException("no value");
      }
      if (out != null) {
        value(parser, token, out);
      } else if (token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY) {
        VariantBuilder.parseJson(parser, false, false); // a duplicate name in it is an error there
      } else if (token == JsonToken.VALUE_STRING) {
        parser.getText(); // its escapes decoded, so a bad one is found
      }
      if (parser.nextToken() != null) {
        throw new IOException("more than one value");
      }
    }
  }

  /** The text of the string with escapes in {@code b[start, end)}, decoded by Jackson. */
  private static String escaped(byte[] b, int start, int end) throws IOException {
    try (JsonParser parser = JsonVariant.JSON.createParser(b, start, end - start)) {
      if (parser.nextToken() != JsonToken.VALUE_STRING) {
        throw new IOException("not a string");
      }
      String text = parser.getText();
      if (parser.nextToken() != null) {
        throw new IOException("more than one value");
      }
      return text;
    }
  }

  private byte[] quotedName(String name) {
    ConcurrentHashMap<String, byte[]> known = quotedNames;
    if (known == null || known.size() >= NAMES_KEPT) {
      known = quotedNames = new ConcurrentHashMap<>();
    }
    byte[] quoted = known.get(name);
    if (quoted == null) {
      byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
      JsonOut out = new JsonOut(utf8.length + 2);
      out.quoted(utf8, 0, utf8.length);
      quoted = out.bytes();
      known.put(name, quoted);
    }
    return quoted;
  }

  /** Appends the JSON text of the value at {@code token} to {@code out}, as the VARIANT path writes it. */
  private static void value(JsonParser parser, JsonToken token, JsonOut out) throws IOException {
    switch (token) {
      case VALUE_STRING -> {
        // ASCII text goes from Jackson's characters to the output as bytes; other text through UTF-8.
        if (!out.quotedAscii(parser.getTextCharacters(), parser.getTextOffset(), parser.getTextLength())) {
          byte[] text = parser.getText().getBytes(StandardCharsets.UTF_8);
          out.quoted(text, 0, text.length);
        }
      }
      case VALUE_TRUE -> out.append(JsonOut.TRUE_TEXT);
      case VALUE_FALSE -> out.append(JsonOut.FALSE_TEXT);
      case VALUE_NULL -> out.append(JsonOut.NULL_TEXT);
      case VALUE_NUMBER_INT -> {
        long n;
        try {
          n = parser.getLongValue();
        } catch (InputCoercionException tooLarge) { // a decimal or double to Spark's builder
          built(parser, out);
          return;
        }
        out.digits(n);
      }
      default -> built(parser, out);
    }
  }

  /** A value built as a VARIANT on its own (the parser left on its last token) and rendered. */
  private static void built(JsonParser parser, JsonOut out) throws IOException {
    Variant v = VariantBuilder.parseJson(parser, false, false);
    out.append(VariantText.text(v.getValue(), v.getMetadata(), "UTC")); // JSON holds no date or time
  }

  /**
   * Sorts the fields by name, as Spark's builder orders an object's, by insertion (a value has a few);
   * false where two have one name.
   */
  private static boolean sortedWithoutDuplicates(ArrayList<Field> fields) {
    for (int i = 1; i < fields.size(); i++) {
      Field field = fields.get(i);
      int j = i - 1;
      int order;
      while (j >= 0 && (order = fields.get(j).compareTo(field)) >= 0) {
        if (order == 0) {
          return false;
        }
        fields.set(j + 1, fields.get(j));
        j--;
      }
      fields.set(j + 1, field);
    }
    return true;
  }

  /** InsertField's put into the sorted fields: a field of the name is replaced. */
  private static ArrayList<Field> put(ArrayList<Field> fields, JsonEditSpec.Put put, JsonOut values) {
    int start = values.size;
    values.append(put.text());
    Field field = new Field(put.name(), start, values.size);
    int at = 0;
    while (at < fields.size() && fields.get(at).compareTo(field) < 0) {
      at++;
    }
    if (at < fields.size() && fields.get(at).name.equals(put.name())) {
      fields.set(at, field);
    } else {
      fields.add(at, field);
    }
    return fields;
  }

  /**
   * ReplaceField's select, as ObjectSelect makes it of a VARIANT object, the fields left sorted; null where
   * two kept fields would share a name (which one the builder keeps is the VARIANT path's to say).
   */
  private static ArrayList<Field> select(ArrayList<Field> fields, ObjectSelect.Lists lists) {
    ArrayList<Field> out = new ArrayList<>(fields.size());
    boolean renamed = false;
    for (Field field : fields) {
      boolean kept =
          !lists.exclude().contains(field.name)
              && (lists.include().isEmpty() || lists.include().contains(field.name));
      if (!kept) {
        continue;
      }
      String name = ObjectSelect.newName(lists, field.name);
      renamed |= !name.equals(field.name);
      out.add(name.equals(field.name) ? field : new Field(name, field.start, field.end));
    }
    return !renamed || sortedWithoutDuplicates(out) ? out : null;
  }
}
