package io.sparklink.connect.host;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.List;
import java.util.Map;

/** JSON across the Python boundary (Py4J carries strings; Jackson reads and writes them, as Connect's REST does). */
final class Json {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not serialisable as JSON: " + value, e);
        }
    }

    static Map<String, Object> object(String json) {
        return read(json, new TypeReference<>() { });
    }

    static Map<String, String> strings(String json) {
        return read(json, new TypeReference<>() { });
    }

    static List<Map<String, Object>> objects(String json) {
        return read(json, new TypeReference<>() { });
    }

    static List<Object> list(String json) {
        return read(json, new TypeReference<>() { });
    }

    private static <T> T read(String json, TypeReference<T> type) {
        try {
            return MAPPER.readValue(json, type);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not the JSON expected here: " + e.getOriginalMessage(), e);
        }
    }
}
