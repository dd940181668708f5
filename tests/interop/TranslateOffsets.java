import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * Interop check: Apache's connect-mirror-client reads the checkpoints sparklink wrote.
 * Usage: TranslateOffsets <target client properties file> <source cluster alias> <group>
 * The properties file holds what any Kafka client of the target needs (bootstrap servers, TLS, SASL).
 * Prints one "topic partition offset" line per translated partition, sorted.
 */
public class TranslateOffsets {
    public static void main(String[] args) throws Exception {
        Properties file = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            file.load(in);
        }
        Map<String, Object> props = new HashMap<>();
        file.stringPropertyNames().forEach(name -> props.put(name, file.getProperty(name)));
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, args[1], args[2], Duration.ofSeconds(60));
        Map<String, Long> sorted = new TreeMap<>();
        offsets.forEach((tp, om) -> sorted.put(tp.topic() + " " + tp.partition(), om.offset()));
        sorted.forEach((tp, offset) -> System.out.println(tp + " " + offset));
    }
}
