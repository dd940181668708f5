import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * Interop check: Apache's connect-mirror-client reads the checkpoints sparklink wrote.
 * Usage: TranslateOffsets <target bootstrap servers> <source cluster alias> <group>
 * Prints one "topic partition offset" line per translated partition, sorted.
 */
public class TranslateOffsets {
    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        Map<TopicPartition, OffsetAndMetadata> offsets =
            RemoteClusterUtils.translateOffsets(props, args[1], args[2], Duration.ofSeconds(60));
        Map<String, Long> sorted = new TreeMap<>();
        offsets.forEach((tp, om) -> sorted.put(tp.topic() + " " + tp.partition(), om.offset()));
        sorted.forEach((tp, offset) -> System.out.println(tp + " " + offset));
    }
}
