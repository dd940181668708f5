// Writes the broker configuration model of the Kafka jars on the classpath as JSON, for sparklink's operator:
// every broker option with its type, whether a running broker can change it (incrementalAlterConfigs), and
// what its validator allows (a range, allowed values or list items); and the KRaft metadata versions up to
// the latest production one (what a new cluster is formatted with). Strimzi ships the same facts as
// kafka-<version>-config-model.json, generated at its build; sparklink generates them once per jar set.
// Run as a single-file program: java -cp <kafka jars> KafkaConfigModel.java <output.json>
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.DynamicBrokerConfig;

public class KafkaConfigModel {
    public static void main(String[] args) throws IOException {
        // The version kafka-clients records in its jar (what AppInfoParser reads; that class moved to an
        // internals package in Kafka 4.4, the resource did not).
        Properties release = new Properties();
        try (InputStream in = ConfigDef.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                release.load(in);
            }
        }
        Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(AbstractKafkaConfig.CONFIG_DEF.configKeys());
        List<String> entries = new ArrayList<>();
        for (ConfigDef.ConfigKey key : keys.values()) {
            StringBuilder out = new StringBuilder();
            out.append(quote(key.name)).append(": {\"type\": ").append(quote(key.type.name().toLowerCase()));
            out.append(", \"dynamic\": ").append(DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS.contains(key.name));
            describe(key.validator, out);
            entries.add(out.append("}").toString());
        }
        List<String> versions = new ArrayList<>();
        for (MetadataVersion version : MetadataVersion.VERSIONS) {
            if (version.compareTo(MetadataVersion.LATEST_PRODUCTION) <= 0) {
                versions.add(quote(version.version()));
            }
        }
        String json = "{\"version\": " + quote(release.getProperty("version", "unknown"))
            + ", \"latestMetadataVersion\": " + quote(MetadataVersion.LATEST_PRODUCTION.version())
            + ", \"metadataVersions\": [" + String.join(", ", versions) + "]"
            + ", \"configs\": {\n  " + String.join(",\n  ", entries) + "\n}}\n";
        Files.writeString(Path.of(args[0]), json, StandardCharsets.UTF_8);
    }

    // Only the validators whose rules can be written down as data; the others (lambdas, the quorum voters'
    // syntax) are left to the broker, as Strimzi's model leaves them.
    private static void describe(ConfigDef.Validator validator, StringBuilder out) {
        if (validator == null) {
            return;
        }
        String text = validator.toString();
        if (validator instanceof ConfigDef.Range) {
            // "[min,...]", "[...,max]" or "[min,...,max]"
            String[] parts = text.substring(1, text.length() - 1).split(",");
            if (!parts[0].equals("...")) {
                out.append(", \"min\": ").append(parts[0]);
            }
            String last = parts[parts.length - 1];
            if (!last.equals("...")) {
                out.append(", \"max\": ").append(last);
            }
        } else if (validator instanceof ConfigDef.ValidString) {
            out.append(", \"values\": ").append(list(text));
        } else if (validator instanceof ConfigDef.CaseInsensitiveValidString) {
            out.append(", \"caseInsensitive\": true, \"values\": ").append(list(text.substring(text.indexOf('['))));
        } else if (validator instanceof ConfigDef.ValidList) {
            if (text.startsWith("[")) {
                out.append(", \"items\": ").append(list(text));
            }
        } else if (validator instanceof ConfigDef.NonEmptyString || validator instanceof ConfigDef.NonNullValidator) {
            out.append(", \"pattern\": \".+\"");
        }
    }

    private static String list(String bracketed) {
        String inner = bracketed.substring(1, bracketed.indexOf(']'));
        List<String> items = new ArrayList<>();
        for (String item : inner.split(",")) {
            if (!item.isBlank()) {
                items.add(quote(item.trim()));
            }
        }
        return "[" + String.join(", ", items) + "]";
    }

    private static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
