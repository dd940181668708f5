import java.nio.charset.StandardCharsets;
import java.util.*;
import javax.crypto.*;
import javax.crypto.spec.SecretKeySpec;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.distributed.Crypto;
import org.apache.kafka.connect.runtime.rest.InternalRequestSignature;
import org.apache.kafka.connect.storage.KafkaConfigBackingStore;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.Request;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;

/** Prints KIP-507 facts from Kafka Connect's own classes as JSON (see tests/data/kip507/README). */
public class Kip507Vectors {
    static String q(String s) { try { return new ObjectMapper().writeValueAsString(s); } catch (Exception e) { throw new RuntimeException(e); } }
    static String hex(byte[] b) { StringBuilder sb = new StringBuilder(); for (byte x : b) sb.append(String.format("%02x", x)); return sb.toString(); }

    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\n");
        // KeyGenerator: default key length, and which sizes init() takes
        out.append("\"key_generators\": {\n");
        String[] kgs = {"HmacMD5", "HmacSHA1", "HmacSHA224", "HmacSHA256", "HmacSHA384", "HmacSHA512", "HmacSHA512/224", "HmacSHA512/256", "HmacSHA3-224", "HmacSHA3-256", "HmacSHA3-384", "HmacSHA3-512", "AES", "hmacsha256", "NoSuchAlg"};
        int[] sizes = {0, 8, 32, 40, 100, 128, 192, 256, 512, 1024};
        for (int i = 0; i < kgs.length; i++) {
            out.append("  ").append(q(kgs[i])).append(": ");
            KeyGenerator kg;
            try { kg = Crypto.SYSTEM.keyGenerator(kgs[i]); } catch (Exception e) { out.append("{\"error\": ").append(q(e.getMessage())).append("}"); out.append(i + 1 < kgs.length ? ",\n" : "\n"); continue; }
            SecretKey k = kg.generateKey();
            out.append("{\"default_bytes\": ").append(k.getEncoded().length).append(", \"key_algorithm\": ").append(q(k.getAlgorithm()))
               .append(", \"generator_algorithm\": ").append(q(kg.getAlgorithm())).append(", \"init\": {");
            for (int j = 0; j < sizes.length; j++) {
                String r;
                try { KeyGenerator g = Crypto.SYSTEM.keyGenerator(kgs[i]); g.init(sizes[j]); r = "ok " + g.generateKey().getEncoded().length; }
                catch (Exception e) { r = e.getClass().getSimpleName() + ": " + e.getMessage(); }
                out.append(q(Integer.toString(sizes[j]))).append(": ").append(q(r)).append(j + 1 < sizes.length ? ", " : "");
            }
            out.append("}}").append(i + 1 < kgs.length ? ",\n" : "\n");
        }
        out.append("},\n");
        // Mac names
        out.append("\"macs\": {\n");
        String[] macs = {"HmacMD5", "HmacSHA1", "HmacSHA224", "HmacSHA256", "HmacSHA384", "HmacSHA512", "HmacSHA512/224", "HmacSHA512/256", "HmacSHA3-224", "HmacSHA3-256", "HmacSHA3-384", "HmacSHA3-512", "hmacsha256", "HmacSHA999"};
        for (int i = 0; i < macs.length; i++) {
            String r;
            try { Mac m = Crypto.SYSTEM.mac(macs[i]); r = "ok " + m.getAlgorithm() + " " + m.getMacLength(); } catch (Exception e) { r = e.getClass().getSimpleName() + ": " + e.getMessage(); }
            out.append("  ").append(q(macs[i])).append(": ").append(q(r)).append(i + 1 < macs.length ? ",\n" : "\n");
        }
        out.append("},\n");
        // Signatures, as RestClient adds them to a forwarded request
        List<Map<String, String>> taskConfigs = new ArrayList<>();
        Map<String, String> t0 = new LinkedHashMap<>(); t0.put("connector.class", "datagen"); t0.put("topic", "caf\u00e9/\u6f22\u5b57"); t0.put("task.id", "0");
        Map<String, String> t1 = new LinkedHashMap<>(); t1.put("connector.class", "datagen"); t1.put("quote", "a \"b\" \\ c\n"); t1.put("task.id", "1");
        taskConfigs.add(t0); taskConfigs.add(t1);
        String jackson = new ObjectMapper().writeValueAsString(taskConfigs);
        String[] bodies = {jackson, "[]", "", "not json at all \u00ff"};
        byte[][] keys = {
            hexBytes("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
            hexBytes("b5e1a38f7c2d"),
            hexBytes("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0011")
        };
        String[] algs = {"HmacSHA256", "HmacSHA1", "HmacSHA512", "HmacSHA384", "HmacSHA224", "HmacMD5", "HmacSHA512/224", "HmacSHA512/256", "HmacSHA3-224", "HmacSHA3-256", "HmacSHA3-384", "HmacSHA3-512"};
        HttpClient client = new HttpClient();
        out.append("\"signatures\": [\n");
        boolean first = true;
        for (byte[] key : keys) for (String body : bodies) for (String alg : algs) {
            Request req = client.newRequest("http://127.0.0.1:1/connectors/c/tasks");
            byte[] bodyBytes = body.getBytes(StandardCharsets.UTF_8);
            InternalRequestSignature.addToRequest(Crypto.SYSTEM, new SecretKeySpec(key, "HmacSHA256"), bodyBytes, alg, req);
            String sig = req.getHeaders().get(InternalRequestSignature.SIGNATURE_HEADER);
            String algHeader = req.getHeaders().get(InternalRequestSignature.SIGNATURE_ALGORITHM_HEADER);
            // and Connect's own verification accepts it
            boolean valid = new InternalRequestSignature(bodyBytes, Crypto.SYSTEM.mac(algHeader), Base64.getDecoder().decode(sig)).isValid(new SecretKeySpec(key, "HmacSHA256"));
            if (!valid) throw new IllegalStateException("Connect rejects its own signature");
            out.append(first ? "" : ",\n").append("  {\"key_hex\": ").append(q(hex(key))).append(", \"algorithm\": ").append(q(algHeader))
               .append(", \"body_hex\": ").append(q(hex(bodyBytes))).append(", \"signature\": ").append(q(sig)).append("}");
            first = false;
        }
        out.append("\n],\n");
        String fence;
        try { InternalRequestSignature.addToRequest(Crypto.SYSTEM, new SecretKeySpec(keys[0], "HmacSHA256"), null, "HmacSHA256", client.newRequest("http://127.0.0.1:1/x")); fence = "ok"; }
        catch (Throwable e) { fence = e.getClass().getName() + ": " + e.getMessage(); }
        out.append("\"null_body_signing\": ").append(q(fence)).append(",\n");
        out.append("\"jackson_task_configs\": ").append(q(jackson)).append(",\n");
        // The session key record, as KafkaConfigBackingStore writes it with the worker's internal converter
        JsonConverter converter = new JsonConverter();
        converter.configure(Collections.singletonMap("schemas.enable", "false"), false);
        out.append("\"session_key_records\": [\n");
        long[] stamps = {1729820000123L, 0L, 4102444800000L};
        for (int i = 0; i < stamps.length; i++) {
            Struct s = new Struct(KafkaConfigBackingStore.SESSION_KEY_V0);
            s.put("key", Base64.getEncoder().encodeToString(keys[i]));
            s.put("algorithm", "HmacSHA256");
            s.put("creation-timestamp", stamps[i]);
            byte[] value = converter.fromConnectData("connect-configs", KafkaConfigBackingStore.SESSION_KEY_V0, s);
            Object back = converter.toConnectData("connect-configs", value).value();
            String ts = ((Map<?, ?>) back).get("creation-timestamp").getClass().getSimpleName();
            out.append("  {\"key\": ").append(q(KafkaConfigBackingStore.SESSION_KEY_KEY)).append(", \"value\": ").append(q(new String(value, StandardCharsets.UTF_8)))
               .append(", \"timestamp_reads_as\": ").append(q(ts)).append("}").append(i + 1 < stamps.length ? ",\n" : "\n");
        }
        out.append("],\n");
        // DistributedConfig's checks of the inter.worker.* settings
        String[][] cases = {
            {"inter.worker.key.generation.algorithm", "NoSuchKeyAlg"},
            {"inter.worker.signature.algorithm", "HmacSHA999"},
            {"inter.worker.verification.algorithms", ""},
            {"inter.worker.verification.algorithms", "HmacSHA256,HmacSHA999"},
            {"inter.worker.verification.algorithms", "HmacSHA1"},
            {"inter.worker.key.size", "32"},
            {"inter.worker.key.size", "100"},
            {"inter.worker.key.ttl.ms", "-1"},
        };
        out.append("\"config_checks\": [\n");
        for (int i = 0; i < cases.length; i++) {
            Map<String, String> props = new HashMap<>();
            props.put("bootstrap.servers", "127.0.0.1:9092");
            props.put("group.id", "g");
            props.put("config.storage.topic", "c");
            props.put("offset.storage.topic", "o");
            props.put("status.storage.topic", "s");
            props.put("key.converter", "org.apache.kafka.connect.json.JsonConverter");
            props.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
            props.put(cases[i][0], cases[i][1]);
            String r;
            try { new DistributedConfig(props); r = "ok"; } catch (Exception e) { r = e.getMessage(); }
            out.append("  {\"setting\": ").append(q(cases[i][0])).append(", \"value\": ").append(q(cases[i][1])).append(", \"message\": ").append(q(r)).append("}").append(i + 1 < cases.length ? ",\n" : "\n");
        }
        out.append("]\n}\n");
        System.out.print(out);
    }

    static byte[] hexBytes(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }
}
