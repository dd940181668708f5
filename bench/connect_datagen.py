"""A Java twin of sparklink's `datagen` source for Apache Kafka Connect, compiled at run time.

Apache Kafka ships no rate-limited generator connector (the `Verifiable*` tools connectors are test
jars only), so benchmarks that compare restart behaviour build this one: the same configs as datagen
(`topic`, `records.per.second` split across `tasks.max` tasks, `value.size`), the same records (key
`"<task>-<seq>"`, value `{"task","seq","ts","payload"}` as a schemaless map, which the worker's
JsonConverter writes as a JSON object), and the same offsets: source partition {"task": n}, offset
{"position": next seq}, read back on (re)start.

`build_jar(work_dir)` compiles it with `javac` against the Kafka jars and returns the plugin jar (with
its ServiceLoader manifest), ready for `ConnectPeer(plugin_jars=...)`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.connect_peer import PEERS

from sparklink.platform import artifacts

CONNECTOR_CLASS = "sparklink.bench.DatagenSourceConnector"

_CONNECTOR = """\
package sparklink.bench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

public class DatagenSourceConnector extends SourceConnector {
    static final ConfigDef CONFIG = new ConfigDef()
        .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "Topic to write to.")
        .define("records.per.second", ConfigDef.Type.INT, 10, ConfigDef.Importance.MEDIUM,
            "Records per second for the whole connector, split across its tasks.")
        .define("value.size", ConfigDef.Type.INT, 16, ConfigDef.Importance.LOW, "Payload length.");
    private Map<String, String> props;

    @Override public String version() { return "1.0"; }
    @Override public void start(Map<String, String> props) { CONFIG.parse(props); this.props = props; }
    @Override public Class<? extends Task> taskClass() { return DatagenSourceTask.class; }
    @Override public void stop() { }
    @Override public ConfigDef config() { return CONFIG; }

    @Override public List<Map<String, String>> taskConfigs(int maxTasks) {
        int rate = Integer.parseInt(props.getOrDefault("records.per.second", "10"));
        int tasks = Math.max(1, Math.min(maxTasks, rate));
        List<Map<String, String>> out = new ArrayList<>();
        for (int n = 0; n < tasks; n++) {
            Map<String, String> c = new HashMap<>(props);
            c.put("task.id", Integer.toString(n));
            c.put("task.rate", Integer.toString(Math.max(1, rate / tasks)));
            out.add(c);
        }
        return out;
    }
}
"""

_TASK = """\
package sparklink.bench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

public class DatagenSourceTask extends SourceTask {
    private int task;
    private long seq;
    private double nanosPerRecord;
    private long next;
    private String topic;
    private String payload;
    private Map<String, Object> partition;
    private volatile boolean stopping;

    @Override public String version() { return "1.0"; }

    @Override public void start(Map<String, String> props) {
        task = Integer.parseInt(props.get("task.id"));
        topic = props.get("topic");
        nanosPerRecord = 1e9 / Long.parseLong(props.getOrDefault("task.rate", "10"));
        payload = "x".repeat(Integer.parseInt(props.getOrDefault("value.size", "16")));
        partition = Map.of("task", task);
        Map<String, Object> stored = context.offsetStorageReader().offset(partition);
        seq = stored == null ? 0 : ((Number) stored.get("position")).longValue();
        next = System.nanoTime();
    }

    @Override public List<SourceRecord> poll() throws InterruptedException {
        long now = System.nanoTime();
        if (now < next) {
            Thread.sleep(Math.min(50, Math.max(1, (next - now) / 1_000_000)));
            return null;
        }
        long due = Math.min(10_000, 1 + (long) ((now - next) / nanosPerRecord));
        List<SourceRecord> out = new ArrayList<>();
        for (long i = 0; i < due && !stopping; i++, seq++) {
            Map<String, Object> value = new HashMap<>();
            value.put("task", task);
            value.put("seq", seq);
            value.put("ts", java.time.Instant.now().toString());
            value.put("payload", payload);
            out.add(new SourceRecord(partition, Map.of("position", seq + 1), topic, null,
                null, task + "-" + seq, null, value));
        }
        next += (long) (due * nanosPerRecord);
        return out;
    }

    @Override public void stop() { stopping = true; }
}
"""


def build_jar(work_dir: Path) -> Path:
    """Compile the connector against the Kafka jars; returns `<work_dir>/sparklink-bench-datagen.jar`."""
    src = work_dir / "src" / "sparklink" / "bench"
    classes = work_dir / "classes"
    src.mkdir(parents=True, exist_ok=True)
    (src / "DatagenSourceConnector.java").write_text(_CONNECTOR)
    (src / "DatagenSourceTask.java").write_text(_TASK)
    services = classes / "META-INF" / "services"
    services.mkdir(parents=True, exist_ok=True)
    (services / "org.apache.kafka.connect.source.SourceConnector").write_text(CONNECTOR_CLASS + "\n")
    _run(
        [
            "javac",
            "--release",
            "17",
            "-nowarn",
            "-cp",
            artifacts.classpath(PEERS),
            "-d",
            str(classes),
            *(str(p) for p in sorted(src.glob("*.java"))),
        ]
    )
    jar = work_dir / "sparklink-bench-datagen.jar"
    _run(["jar", "cf", str(jar), "-C", str(classes), "."])
    return jar


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
