package io.sparklink.connect.host;

import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A plugin's ConfigDef and its validation, as Connect's REST entities carry them (AbstractHerder's
 * convertConfigKey and convertConfigValue): the worker's validation merges them with the connector-level
 * keys it declares itself.
 */
final class ConfigJson {
    private ConfigJson() {
    }

    /** The keys in the ConfigDef's order: name, type, required, default (as text), doc, group, order, width, ... */
    static List<Map<String, Object>> keys(ConfigDef def) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            boolean required = ConfigDef.NO_DEFAULT_VALUE.equals(key.defaultValue);
            entry.put("name", key.name);
            entry.put("type", key.type.name());
            entry.put("required", required);
            entry.put("default_value", required ? null : ConfigDef.convertToString(key.defaultValue, key.type));
            entry.put("importance", key.importance == null ? "LOW" : key.importance.name());
            entry.put("documentation", key.documentation);
            entry.put("group", key.group);
            entry.put("order", key.orderInGroup);
            entry.put("width", key.width == null ? "NONE" : key.width.name());
            entry.put("display_name", key.displayName);
            entry.put("dependents", key.dependents);
            out.add(entry);
        }
        return out;
    }

    /** Per key of the plugin's validation: the value as text, recommended values, errors and visibility. */
    static Map<String, Object> values(ConfigDef def, Config config) {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, ConfigDef.ConfigKey> keys = def.configKeys();
        for (ConfigValue value : config.configValues()) {
            ConfigDef.ConfigKey key = keys.get(value.name());
            ConfigDef.Type type = key == null ? null : key.type;
            ConfigDef.Type listed = type == ConfigDef.Type.LIST ? ConfigDef.Type.STRING : type;
            List<String> recommended = new ArrayList<>();
            for (Object item : value.recommendedValues()) {
                recommended.add(ConfigDef.convertToString(item, listed));
            }
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("value", ConfigDef.convertToString(value.value(), type));
            entry.put("recommended_values", recommended);
            entry.put("errors", value.errorMessages());
            entry.put("visible", value.visible());
            out.put(value.name(), entry);
        }
        return out;
    }
}
