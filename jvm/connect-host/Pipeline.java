package io.sparklink.connect.host;

import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.errors.Stage;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.ConverterConfig;
import org.apache.kafka.connect.storage.ConverterType;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A Java task's converters, transforms and predicates, built from the connector's config as Connect's Worker
 * builds them: each converter from the connector's {@code key.converter} / {@code value.converter} /
 * {@code header.converter} with that config's options, else the worker's; each transform from
 * {@code transforms.<alias>.*} with its predicate ({@code predicates.<name>.*}) and {@code negate}. Every
 * class comes from plugin.path or the host's class path (Apache's JsonConverter, SMTs and predicates), each
 * running with its own class loader as the thread's context loader.
 */
final class Pipeline implements AutoCloseable {
    static final String JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter";

    final Converter key;
    final Converter value;
    final HeaderConverter header;
    final ErrorPolicy errors;
    private final List<Step<?>> steps = new ArrayList<>();

    Pipeline(PluginSet plugins, Map<String, String> connector, Map<String, String> worker, ErrorPolicy errors) {
        this.errors = errors;
        key = converter(plugins, connector, worker, "key.converter", true);
        value = converter(plugins, connector, worker, "value.converter", false);
        header = headerConverter(plugins, connector, worker);
        for (String alias : list(connector.get("transforms"))) {
            steps.add(step(plugins, connector, alias));
        }
    }

    private static List<String> list(String text) {
        List<String> out = new ArrayList<>();
        if (text != null) {
            for (String part : text.split(",")) {
                if (!part.trim().isEmpty()) {
                    out.add(part.trim());
                }
            }
        }
        return out;
    }

    /** The keys under `prefix.` of a config, without the prefix. */
    static Map<String, Object> sub(Map<String, String> config, String prefix) {
        Map<String, Object> out = new HashMap<>();
        config.forEach((k, v) -> {
            if (k.startsWith(prefix + ".")) {
                out.put(k.substring(prefix.length() + 1), v);
            }
        });
        return out;
    }

    private static Converter converter(PluginSet plugins, Map<String, String> connector, Map<String, String> worker,
                                       String property, boolean isKey) {
        Map<String, String> source = connector.containsKey(property) ? connector : worker;
        // Connect requires the worker to name its converters; sparklink's Java tasks default to JsonConverter.
        String name = source.getOrDefault(property, JSON_CONVERTER);
        Converter converter = instance(plugins, name, Converter.class, property);
        Map<String, Object> props = sub(source, property);
        props.put(ConverterConfig.TYPE_CONFIG, (isKey ? ConverterType.KEY : ConverterType.VALUE).getName());
        try (Swap ignored = Swap.to(converter.getClass().getClassLoader())) {
            converter.configure(props, isKey);
        }
        return converter;
    }

    private static HeaderConverter headerConverter(PluginSet plugins, Map<String, String> connector,
                                                   Map<String, String> worker) {
        String property = "header.converter";
        Map<String, String> source = connector.containsKey(property) ? connector : worker;
        String name = source.getOrDefault(property, SimpleHeaderConverter.class.getName());
        HeaderConverter converter = instance(plugins, name, HeaderConverter.class, property);
        Map<String, Object> props = sub(source, property);
        props.put(ConverterConfig.TYPE_CONFIG, ConverterType.HEADER.getName());
        try (Swap ignored = Swap.to(converter.getClass().getClassLoader())) {
            converter.configure(props);
        }
        return converter;
    }

    static <T> T instance(PluginSet plugins, String name, Class<T> base, String property) {
        Class<?> klass;
        try {
            klass = plugins.pluginClass(name);
        } catch (ClassNotFoundException e) {
            throw new ConnectException("Failed to find any class that implements " + base.getSimpleName()
                    + " for the config " + property + " (" + name + ")");
        }
        if (!base.isAssignableFrom(klass)) {
            throw new ConnectException(name + " (" + property + ") is not a " + base.getSimpleName());
        }
        return base.cast(plugins.newInstance(klass));
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Step<?> step(PluginSet plugins, Map<String, String> connector, String alias) {
        String prefix = "transforms." + alias;
        Map<String, Object> props = sub(connector, prefix);
        String type = (String) props.remove("type");
        if (type == null) {
            throw new ConnectException("Missing required configuration \"" + prefix + ".type\" which has no default value.");
        }
        String predicateName = (String) props.remove("predicate");
        boolean negate = Boolean.parseBoolean(String.valueOf(props.remove("negate")));
        Transformation transformation = instance(plugins, type, Transformation.class, prefix + ".type");
        try (Swap ignored = Swap.to(transformation.getClass().getClassLoader())) {
            transformation.configure(props);
        }
        Predicate predicate = null;
        if (predicateName != null && !predicateName.isBlank()) {
            String at = "predicates." + predicateName.trim();
            Map<String, Object> predicateProps = sub(connector, at);
            String predicateType = (String) predicateProps.remove("type");
            if (predicateType == null) {
                throw new ConnectException("Missing required configuration \"" + at + ".type\" which has no default value.");
            }
            predicate = instance(plugins, predicateType, Predicate.class, at + ".type");
            try (Swap ignored = Swap.to(predicate.getClass().getClassLoader())) {
                predicate.configure(predicateProps);
            }
        }
        return new Step(transformation, predicate, negate);
    }

    /** The record through every transform, in order; null if one drops it (a failure is the caller's). */
    @SuppressWarnings("unchecked")
    <R extends ConnectRecord<R>> R transform(R record, Failure failure) {
        R current = record;
        for (Step<?> raw : steps) {
            Step<R> step = (Step<R>) raw;
            R input = current;
            current = errors.run(Stage.TRANSFORMATION, step.transformation.getClass(), failure, () -> step.apply(input));
            if (current == null) {
                return null;
            }
        }
        return current;
    }

    boolean hasTransforms() {
        return !steps.isEmpty();
    }

    @Override
    public void close() {
        for (Step<?> step : steps) {
            step.close();
        }
        closeQuietly(key);
        closeQuietly(value);
        closeQuietly(header);
    }

    private static void closeQuietly(Object plugin) {
        if (plugin instanceof AutoCloseable closeable) {
            try (Swap ignored = Swap.to(plugin.getClass().getClassLoader())) {
                closeable.close();
            } catch (Exception e) {
                // closing a plugin must not fail the task's stop
            }
        }
    }

    /** One transform with its optional predicate (Connect's TransformationStage). */
    private record Step<R extends ConnectRecord<R>>(Transformation<R> transformation, Predicate<R> predicate,
                                                     boolean negate) {
        R apply(R record) {
            if (predicate != null) {
                boolean test;
                try (Swap ignored = Swap.to(predicate.getClass().getClassLoader())) {
                    test = predicate.test(record);
                }
                if (!(negate ^ test)) {
                    return record;
                }
            }
            try (Swap ignored = Swap.to(transformation.getClass().getClassLoader())) {
                return transformation.apply(record);
            }
        }

        void close() {
            closeQuietly(transformation);
            closeQuietly(predicate);
        }
    }

    /** What went wrong with one record: its stage, the class that failed and the error (Connect's ProcessingContext). */
    static final class Failure {
        Stage stage;
        Class<?> executing;
        Throwable error;
        /** A sink's record as it was read from Kafka (what its dead letter queue receives). */
        org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> original;

        boolean failed() {
            return error != null;
        }
    }
}
