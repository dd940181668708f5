package io.sparklink.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * What {@link JsonEdit} does to a task's values, read from the JSON text the pipeline writes once per task
 * (transforms/json_text.py): {@code [skip, edit, ...]}, {@code skip} the names of top-level fields left out
 * unread (as {@link JsonVariantWithout} leaves them out), each edit either {@code ["put", name, string]}
 * (InsertField's static field) or {@code ["select", exclude, include, renamedFrom, renamedTo]}
 * (ReplaceField, its lists as {@link ObjectSelect} reads them).
 */
record JsonEditSpec(List<String> skip, List<JsonEditSpec.Edit> edits) {
  sealed interface Edit permits Put, Select {}

  /** A field set to a string, {@code text} the string's JSON. */
  record Put(String name, byte[] text) implements Edit {}

  record Select(ObjectSelect.Lists lists) implements Edit {}

  static final JsonEditSpec MALFORMED = new JsonEditSpec(List.of(), List.of());

  private static final JsonFactory JSON = new JsonFactory();
  private static final ReadOnce<JsonEditSpec> READ = new ReadOnce<>(JsonEditSpec::read);

  /** The spec of {@code text}, read once per text ({@link #MALFORMED} for anything but a spec). */
  static JsonEditSpec of(String text) {
    return READ.of(text);
  }

  private static JsonEditSpec read(String text) {
    try (JsonParser parser = JSON.createParser(text)) {
      if (parser.nextToken() != JsonToken.START_ARRAY || parser.nextToken() != JsonToken.START_ARRAY) {
        return MALFORMED;
      }
      List<String> skip = ObjectSelect.names(parser);
      List<Edit> edits = new ArrayList<>();
      while (parser.nextToken() == JsonToken.START_ARRAY) {
        if (parser.nextToken() != JsonToken.VALUE_STRING) {
          return MALFORMED;
        }
        String kind = parser.getText();
        if (kind.equals("put")) {
          String name = parser.nextToken() == JsonToken.VALUE_STRING ? parser.getText() : null;
          String value = parser.nextToken() == JsonToken.VALUE_STRING ? parser.getText() : null;
          if (name == null || value == null || parser.nextToken() != JsonToken.END_ARRAY) {
            return MALFORMED;
          }
          JsonOut out = new JsonOut(value.length() + 2);
          byte[] utf8 = value.getBytes(StandardCharsets.UTF_8);
          out.quoted(utf8, 0, utf8.length);
          edits.add(new Put(name, out.bytes()));
        } else if (kind.equals("select")) {
          ObjectSelect.Lists lists = ObjectSelect.lists(parser);
          if (lists == ObjectSelect.MALFORMED) {
            return MALFORMED;
          }
          edits.add(new Select(lists));
        } else {
          return MALFORMED;
        }
      }
      return parser.currentToken() == JsonToken.END_ARRAY ? new JsonEditSpec(skip, edits) : MALFORMED;
    } catch (IOException | IllegalArgumentException e) {
      return MALFORMED;
    }
  }
}
