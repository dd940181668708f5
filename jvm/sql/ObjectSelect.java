package io.sparklink.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.types.variant.Variant.ObjectField;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * The SQL function {@code sparklink_object_select(VARIANT obj, STRING lists) -> VARIANT}: the object's
 * fields not excluded and, when the included list is not empty, included, each renamed where it is in the
 * renamed-from list (to the name at the same place in the renamed-to list); NULL where {@code obj} is not
 * an object or {@code lists} is not four lists of names. {@code lists} is the JSON text
 * {@code [exclude, include, renamed_from, renamed_to]}, each an array of strings. ReplaceField's edit of a
 * schemaless value or a schema'd payload.
 *
 * <p>It answers as its SQL form ({@code map_filter} and {@code transform_keys} over the object as a
 * {@code map<string,variant>}), without converting the object to a map and back. The lists come as one
 * text rather than four SQL arrays: Spark converts each array argument of a Java function to a Scala
 * {@code Seq} for every record, and reads the session's settings again for each element it converts,
 * which took a tenth of a JSON sink's CPU (JFR, bench.sink's chain). The text is a transform's
 * configuration, the same for every record: it is read once and kept.
 */
public final class ObjectSelect implements UDF2<VariantVal, String, VariantVal> {
  private static final long serialVersionUID = 1L;
  private static final JsonFactory JSON = new JsonFactory();

  /** The four lists of one {@code lists} text. */
  record Lists(List<String> exclude, List<String> include, List<String> from, List<String> to) {}

  static final Lists MALFORMED = new Lists(List.of(), List.of(), List.of(), List.of());

  // Each text's lists, read once: a text per transform that names fields (ReplaceField, HeaderFrom's
  // move, a schema's fields), one per sink whose JSON parse leaves fields out (JsonVariantWithout), and
  // a few per record where the names depend on the record (the absent fields a schema'd MaskField or
  // Cast drops).
  private static final ReadOnce<Lists> READ = new ReadOnce<>(ObjectSelect::read);

  /** A text and its lists: what one copy of a function read last. */
  record Seen(String text, Lists lists) {
    /**
     * The lists of {@code text}: {@code last}'s where it holds that text, as for every record after the
     * first where the text is a constant (Spark hands it over as a new String each time, and comparing
     * it costs less than hashing it for the shared map), else read.
     */
    static Seen of(Seen last, String text) {
      return last != null && last.text.equals(text) ? last : new Seen(text, READ.of(text));
    }
  }

  private transient Seen last;

  @Override
  public VariantVal call(VariantVal obj, String lists) {
    Variant object = ObjectFields.object(obj);
    if (object == null || lists == null) {
      return null;
    }
    Seen seen = last = Seen.of(last, lists);
    Lists parsed = seen.lists();
    if (parsed == MALFORMED) { // a user's SQL step may pass anything
      return null;
    }
    int size = object.objectSize();
    // Built only from the first field that is left out or renamed: an object the lists do not change
    // comes back as it is. So it does on a sink whose JSON parse already left out what ReplaceField drops
    // (JsonVariantWithout), where building it again cost bench.sink's chain a VARIANT per record.
    ObjectFields out = null;
    for (int i = 0; i < size; i++) {
      ObjectField field = object.getFieldAtIndex(i);
      boolean kept =
          !parsed.exclude.contains(field.key) && (parsed.include.isEmpty() || parsed.include.contains(field.key));
      String name = kept ? newName(parsed, field.key) : field.key;
      if (out == null) {
        if (kept && name.equals(field.key)) {
          continue;
        }
        out = new ObjectFields(size);
        for (int before = 0; before < i; before++) {
          ObjectField same = object.getFieldAtIndex(before);
          out.put(same.key, same.value);
        }
      }
      if (kept) {
        out.put(name, field.value);
      }
    }
    return out == null ? obj : out.finish();
  }

  /** {@code key}'s name after the renames. A few names each: a linear search beats building a set. */
  static String newName(Lists lists, String key) {
    int renamed = lists.from.indexOf(key);
    String name = renamed < 0 || renamed >= lists.to.size() ? key : lists.to.get(renamed);
    return name == null ? key : name;
  }

  private static Lists read(String text) {
    try (JsonParser parser = JSON.createParser(text)) {
      if (parser.nextToken() != JsonToken.START_ARRAY) {
        return MALFORMED;
      }
      return lists(parser);
    } catch (IOException | IllegalArgumentException e) {
      return MALFORMED;
    }
  }

  /**
   * The four lists that follow the parser's position, up to the end of the array holding them
   * ({@link #MALFORMED} where there are not four); throws on a list that holds anything but names.
   */
  static Lists lists(JsonParser parser) throws IOException {
    List<List<String>> lists = new ArrayList<>(4);
    while (parser.nextToken() == JsonToken.START_ARRAY) {
      lists.add(names(parser));
    }
    if (parser.currentToken() != JsonToken.END_ARRAY || lists.size() != 4) {
      return MALFORMED;
    }
    return new Lists(lists.get(0), lists.get(1), lists.get(2), lists.get(3));
  }

  /**
   * The names in the array the parser is at the start of (a JSON null is kept as null: a rename to it
   * keeps the name, see {@link #newName}); throws on anything else.
   */
  static List<String> names(JsonParser parser) throws IOException {
    List<String> names = new ArrayList<>();
    JsonToken token;
    while ((token = parser.nextToken()) != JsonToken.END_ARRAY) {
      if (token != JsonToken.VALUE_STRING && token != JsonToken.VALUE_NULL) {
        throw new IllegalArgumentException("not a name: " + token);
      }
      names.add(parser.getValueAsString());
    }
    return names;
  }
}
