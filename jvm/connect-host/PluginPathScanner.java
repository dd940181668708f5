package io.sparklink.connect.host;

import io.github.classgraph.ClassGraph;
import io.github.classgraph.ClassInfo;
import io.github.classgraph.ClassInfoList;
import io.github.classgraph.ScanResult;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.PluginDesc;
import org.apache.kafka.connect.runtime.isolation.PluginScanResult;
import org.apache.kafka.connect.runtime.isolation.PluginScanner;
import org.apache.kafka.connect.runtime.isolation.PluginSource;
import org.apache.kafka.connect.runtime.isolation.PluginType;

import java.lang.reflect.Modifier;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.BiConsumer;

/**
 * Connect's reflective discovery (ReflectionScanner's rules: a public, concrete class with a public no-argument
 * constructor that extends a plugin type and instantiates) over a plugin location's own jars only. Connect's
 * ReflectionScanner also reads every class of the loaders above (its whole runtime class path) once per
 * location: measured here, 7 s of CPU and a 1.7 GB resident peak for two plugin locations, inside the Spark
 * driver. A plugin class whose plugin supertype lives only on the host's class path behind an intermediate
 * class of the host (rare) is then found through its service manifest instead (plugin.discovery=hybrid_*).
 *
 * <p>A class that fails to load or instantiate goes to `failed` (class name, reason) instead of the log.
 */
final class PluginPathScanner extends PluginScanner {
    private static final PluginType[] SCANNED = {PluginType.SINK, PluginType.SOURCE, PluginType.CONVERTER,
        PluginType.HEADER_CONVERTER, PluginType.TRANSFORMATION, PluginType.PREDICATE};

    private final BiConsumer<String, String> failed;

    PluginPathScanner(BiConsumer<String, String> failed) {
        this.failed = failed;
    }

    @Override
    protected PluginScanResult scanPlugins(PluginSource source) {
        ClassGraph graph = new ClassGraph().overrideClassLoaders(source.loader()).ignoreParentClassLoaders()
                .enableClassInfo().enableExternalClasses();
        try (ScanResult scan = graph.scan()) {
            return new PluginScanResult(
                    found(scan, PluginType.SINK, source), found(scan, PluginType.SOURCE, source),
                    found(scan, PluginType.CONVERTER, source), found(scan, PluginType.HEADER_CONVERTER, source),
                    cast(found(scan, PluginType.TRANSFORMATION, source)), cast(found(scan, PluginType.PREDICATE, source)),
                    getServiceLoaderPluginDesc(PluginType.CONFIGPROVIDER, source),
                    getServiceLoaderPluginDesc(PluginType.REST_EXTENSION, source),
                    getServiceLoaderPluginDesc(PluginType.CONNECTOR_CLIENT_CONFIG_OVERRIDE_POLICY, source));
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static <T> SortedSet<T> cast(SortedSet<?> set) {
        return (SortedSet) set;
    }

    @SuppressWarnings("unchecked")
    private <T> SortedSet<PluginDesc<T>> found(ScanResult scan, PluginType type, PluginSource source) {
        String base = type.superClass().getName();
        ClassInfoList classes = type.superClass().isInterface() ? scan.getClassesImplementing(base) : scan.getSubclasses(base);
        SortedSet<PluginDesc<T>> result = new TreeSet<>();
        for (ClassInfo info : classes) {
            if (!info.isPublic() || info.isAbstract() || info.isInterface()) {
                continue;
            }
            try (LoaderSwap ignored = withClassLoader(source.loader())) {
                Class<? extends T> klass = (Class<? extends T>) Class.forName(info.getName(), false, source.loader());
                if (klass.getClassLoader() != source.loader() || !Modifier.isPublic(klass.getModifiers())) {
                    continue; // visible from a loader above: not this location's plugin
                }
                T instance = klass.getDeclaredConstructor().newInstance();
                result.add(pluginDesc(klass, versionFor(instance), type, source));
            } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
                failed.accept(info.getName(), "cannot be used as a " + type.simpleName() + reflectiveErrorDescription(e)
                        + ": " + Errors.chain(e));
            }
        }
        return result;
    }

    static PluginType[] scannedTypes() {
        return SCANNED.clone();
    }
}
