package io.sparklink.connect.host;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.isolation.ClassLoaderFactory;
import org.apache.kafka.connect.runtime.isolation.DelegatingClassLoader;
import org.apache.kafka.connect.runtime.isolation.PluginClassLoader;
import org.apache.kafka.connect.runtime.isolation.PluginDesc;
import org.apache.kafka.connect.runtime.isolation.PluginDiscoveryMode;
import org.apache.kafka.connect.runtime.isolation.PluginScanResult;
import org.apache.kafka.connect.runtime.isolation.PluginSource;
import org.apache.kafka.connect.runtime.isolation.PluginType;
import org.apache.kafka.connect.runtime.isolation.PluginUtils;
import org.apache.kafka.connect.runtime.isolation.ServiceLoaderScanner;
import org.apache.maven.artifact.versioning.InvalidVersionSpecificationException;
import org.apache.maven.artifact.versioning.VersionRange;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.ZipFile;

/**
 * The plugins of one {@code plugin.path}, found as Apache Connect finds them, with its own isolation classes:
 * a {@link PluginClassLoader} per plugin location (a directory of jars, an uber jar or a class tree) under a
 * {@link DelegatingClassLoader}, scanned by Connect's {@link ServiceLoaderScanner} and {@link ReflectionScanner}
 * as {@code plugin.discovery} says (KIP-898). Plugin classes load from their own jars first; Connect's API,
 * the Kafka clients and the JDK come from the host loader above.
 *
 * <p>What sparklink adds is the reporting. Every plugin that cannot be used is reported once, with its
 * reason, in {@link #describe()}: a location with an unreadable jar (skipped whole: a plugin missing a jar
 * would fail later) and a plugin class that fails to load or instantiate (naming its jar). The worker logs
 * each problem once and names it in the REST answers that touch the class.
 *
 * <p>A class found in several locations is every one of its versions, as in Connect 4.x (KIP-891): each is
 * listed, and the class loads from the latest one, which Connect's {@link DelegatingClassLoader} picks
 * ({@link #latest}); {@link #versionProblem} answers a {@code connector.plugin.version} with Connect's message.
 *
 * <p>The host's own class path (connect-json, connect-transforms, connect-runtime's converters) is a
 * classpath source discovered through its service manifests only: Java tasks can use Apache's converters
 * and transforms by name, as in Connect.
 */
public final class PluginSet {
    private static final List<PluginType> LISTED = List.of(PluginType.SINK, PluginType.SOURCE, PluginType.TRANSFORMATION,
            PluginType.PREDICATE, PluginType.CONVERTER, PluginType.HEADER_CONVERTER);

    private final DelegatingClassLoader loader;
    private final Set<PluginDesc<?>> listed = new TreeSet<>(); // in Connect's order: class, then version
    private final Map<String, PluginDesc<?>> latest = new TreeMap<>(); // "<class>/<type>" -> its latest version
    private final Set<String> names = new TreeSet<>();
    private final Map<String, String> aliases = new TreeMap<>();
    private final List<Map<String, Object>> problems = new ArrayList<>();
    private final Set<String> reported = new TreeSet<>();
    private final Map<String, URLClassLoader> locationLoaders = new LinkedHashMap<>();
    private final String pluginPath;
    private final long scanMillis;

    PluginSet(String pluginPath, String discovery, URLClassLoader hostLoader) {
        long started = System.currentTimeMillis();
        this.pluginPath = pluginPath;
        PluginDiscoveryMode mode = discoveryMode(discovery);
        ClassLoaderFactory factory = new ClassLoaderFactory();
        loader = factory.newDelegatingClassLoader(hostLoader);
        Set<PluginSource> isolated = new LinkedHashSet<>();
        for (Path location : PluginUtils.pluginLocations(pluginPath, false)) {
            PluginSource source = isolatedSource(location, factory);
            if (source != null) {
                isolated.add(source);
                locationLoaders.put(location.toString(), (URLClassLoader) source.loader());
            }
        }
        PluginSource classpath = new PluginSource(null, PluginSource.Type.CLASSPATH, hostLoader, hostLoader.getURLs());
        PluginScanResult fromServices = mode.serviceLoad()
                ? new ServiceLoaderScanner().discoverPlugins(isolated) : new PluginScanResult(List.of());
        PluginScanResult reflected = mode.reflectivelyScan()
                ? new PluginPathScanner(this::unusable).discoverPlugins(isolated) : new PluginScanResult(List.of());
        PluginScanResult fromClasspath = new ServiceLoaderScanner().discoverPlugins(Set.of(classpath));
        PluginScanResult all = new PluginScanResult(List.of(reflected, fromServices, fromClasspath));
        reportMissingManifests(mode, reflected, fromServices);
        // Apache's own converters, transforms and predicates are the host's: plugins often carry copies of them
        // (Debezium's archive has connect-api), which are neither listed twice nor ambiguous.
        Set<String> onClasspath = new TreeSet<>();
        fromClasspath.forEach(desc -> onClasspath.add(desc.className()));
        all.forEach(desc -> {
            String name = desc.className();
            boolean hostCopy = onClasspath.contains(name) && !"classpath".equals(desc.location());
            if (LISTED.contains(desc.type()) && !hostCopy && listed.add(desc)) {
                latest.merge(name + "/" + desc.typeName(), desc, (a, b) -> a.compareTo(b) >= 0 ? a : b);
                names.add(name);
            }
        });
        for (PluginSource source : isolated) {
            reportUnusable(source);
        }
        loader.installDiscoveredPlugins(new PluginScanResult(List.of(reflected, fromServices, fromClasspath)));
        aliases.putAll(PluginUtils.computeAliases(all));
        scanMillis = System.currentTimeMillis() - started;
    }

    private static PluginDiscoveryMode discoveryMode(String discovery) {
        try {
            return PluginDiscoveryMode.valueOf(discovery.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ConnectException("Invalid value " + discovery + " for configuration plugin.discovery: String must"
                    + " be one of: only_scan, hybrid_warn, hybrid_fail, service_load");
        }
    }

    /** A plugin location's source, or null (reported) when one of its jars cannot be read. */
    private PluginSource isolatedSource(Path location, ClassLoaderFactory factory) {
        try {
            List<Path> archives = PluginUtils.pluginUrls(location);
            if (archives.isEmpty()) {
                return null; // no jars or classes: not a Java plugin (e.g. a Python distribution)
            }
            for (Path archive : archives) {
                if (!PluginUtils.isArchive(archive)) {
                    continue;
                }
                try (ZipFile zip = new ZipFile(archive.toFile())) {
                    zip.size();
                } catch (IOException e) {
                    problems.add(problem(location.toString(), null, "plugin location " + location + " is skipped: "
                            + archive.getFileName() + " is not a readable jar (" + e.getMessage() + ")"));
                    return null;
                }
            }
            return PluginUtils.isolatedPluginSource(location, loader, factory);
        } catch (IOException | RuntimeException e) {
            problems.add(problem(location.toString(), null, "plugin location " + location + " is skipped: " + e));
            return null;
        }
    }

    private void reportMissingManifests(PluginDiscoveryMode mode, PluginScanResult reflected, PluginScanResult services) {
        if (mode != PluginDiscoveryMode.HYBRID_WARN && mode != PluginDiscoveryMode.HYBRID_FAIL) {
            return;
        }
        Set<String> listed = new TreeSet<>();
        services.forEach(desc -> listed.add(desc.className()));
        Set<String> missing = new TreeSet<>();
        reflected.forEach(desc -> {
            if (!listed.contains(desc.className())) {
                missing.add(desc.className() + " (" + desc.location() + ")");
            }
        });
        if (missing.isEmpty()) {
            return;
        }
        String message = "plugins without ServiceLoader manifests, which plugin.discovery=service_load would not find: "
                + String.join(", ", missing);
        if (mode == PluginDiscoveryMode.HYBRID_FAIL) {
            throw new ConnectException(message + ". To start anyway, set plugin.discovery=hybrid_warn in the worker config.");
        }
        problems.add(Map.of("level", "warning", "message", message
                + " (set plugin.discovery=only_scan to silence this, as in Connect)"));
    }

    /**
     * The plugin classes of a location that the scan found no usable plugin for: each is loaded and
     * instantiated here once more to say why (Connect's scanners only log it, once per scanner).
     */
    private void reportUnusable(PluginSource source) {
        Map<String, PluginType> candidates = new LinkedHashMap<>();
        URLClassLoader own = (URLClassLoader) source.loader();
        for (PluginType type : LISTED) {
            for (String name : manifestEntries(own, type)) {
                candidates.putIfAbsent(name, type);
            }
        }
        candidates.forEach((name, type) -> {
            if (names.contains(name) || reported.contains(name)) {
                return;
            }
            String why = instantiationError(own, name);
            if (why != null) {
                unusable(name, "cannot be used as a " + type.simpleName() + " (named in its service manifest): " + why);
            }
        });
    }

    /** A plugin class that failed to load or instantiate: one problem per class, whichever scan saw it first. */
    private void unusable(String className, String why) {
        if (reported.add(className)) {
            String location = locationOf(className);
            String jar = jarOf(className);
            problems.add(problem(location, className, "plugin class " + className + " in " + location
                    + (jar == null ? "" : " (" + jar + ")") + " " + why));
        }
    }

    private String locationOf(String className) {
        for (Map.Entry<String, URLClassLoader> entry : locationLoaders.entrySet()) {
            if (entry.getValue().findResource(className.replace('.', '/') + ".class") != null) {
                return entry.getKey();
            }
        }
        return "plugin.path";
    }

    /** The jar a plugin class's bytes come from, or null (a class tree, or not found). */
    private String jarOf(String className) {
        for (URLClassLoader own : locationLoaders.values()) {
            URL url = own.findResource(className.replace('.', '/') + ".class");
            if (url != null && "jar".equals(url.getProtocol())) {
                String path = url.getPath();
                int bang = path.indexOf("!/");
                return (bang < 0 ? path : path.substring(0, bang)).replaceFirst("^file:", "");
            }
        }
        return null;
    }

    private static List<String> manifestEntries(URLClassLoader loader, PluginType type) {
        List<String> names = new ArrayList<>();
        try {
            Enumeration<URL> manifests = loader.findResources("META-INF/services/" + type.superClass().getName());
            for (URL url : Collections.list(manifests)) {
                try (InputStream in = url.openStream()) {
                    for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                        String entry = line.replaceAll("#.*", "").trim();
                        if (!entry.isEmpty()) {
                            names.add(entry);
                        }
                    }
                }
            }
        } catch (IOException e) {
            // an unreadable manifest leaves nothing to report for it
        }
        return names;
    }

    private static String instantiationError(ClassLoader loader, String name) {
        Thread thread = Thread.currentThread();
        ClassLoader saved = thread.getContextClassLoader();
        thread.setContextClassLoader(loader);
        try {
            Class<?> klass = Class.forName(name, true, loader);
            if (!Modifier.isPublic(klass.getModifiers()) || Modifier.isAbstract(klass.getModifiers())) {
                return null; // not a plugin Connect would list either
            }
            klass.getDeclaredConstructor().newInstance();
            return null;
        } catch (Throwable t) {
            return Errors.chain(t);
        } finally {
            thread.setContextClassLoader(saved);
        }
    }

    private static Map<String, Object> problem(String location, String className, String message) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("level", "error");
        out.put("location", location);
        if (className != null) {
            out.put("class", className);
        }
        out.put("message", message);
        return out;
    }

    // ------------------------------------------------------------------ lookups

    /** JSON: every usable plugin (class, type, version, location), the problems and the aliases. */
    public String describe() {
        List<Map<String, Object>> plugins = new ArrayList<>();
        for (PluginDesc<?> desc : listed) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("class", desc.className());
            entry.put("type", desc.typeName());
            entry.put("version", desc.version());
            entry.put("location", desc.location());
            entry.put("latest", latest.get(desc.className() + "/" + desc.typeName()) == desc);
            plugins.add(entry);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("plugins", plugins);
        out.put("problems", problems);
        out.put("aliases", aliases);
        out.put("scanMillis", scanMillis);
        return Json.write(out);
    }

    /** The full class name an alias or class name stands for. */
    public String resolve(String classOrAlias) {
        return aliases.getOrDefault(classOrAlias, classOrAlias);
    }

    /** The loaded class of a known plugin, or of a class its plugin's loader can see (a task class). */
    public Class<?> pluginClass(String classOrAlias) throws ClassNotFoundException {
        // Connect's DelegatingClassLoader loads a class found in several locations from its latest version.
        return loader.loadClass(resolve(classOrAlias.trim()));
    }

    /**
     * The loaded class of the connector a task runs: a task runs where Spark puts it (an executor of a cluster),
     * which scans plugin.path again, so a class the worker found and this JVM does not is told as what it most
     * likely is, a plugin.path location missing or different on this host, rather than a bare
     * ClassNotFoundException.
     */
    public Class<?> connectorClassHere(String classOrAlias) {
        try {
            return pluginClass(classOrAlias);
        } catch (ClassNotFoundException e) {
            List<String> missing = new ArrayList<>();
            for (String entry : pluginPath.trim().split("\\s*,\\s*", -1)) {
                if (entry.isBlank()) {
                    continue;
                }
                Path path = Path.of(entry).toAbsolutePath();
                if (!java.nio.file.Files.isReadable(path)) {
                    missing.add(path + (java.nio.file.Files.exists(path) ? " is not readable" : " does not exist"));
                }
            }
            String host;
            try {
                host = java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.io.IOException unknown) {
                host = "this host";
            }
            String why = missing.isEmpty()
                    ? "plugin.path (" + pluginPath + ") holds no such plugin here"
                    : "on this host, plugin.path entry " + String.join(", entry ", missing);
            throw new ConnectException("Connector class " + classOrAlias.trim() + " cannot be loaded in the JVM that"
                    + " runs the task (" + host + "): " + why + ". Every JVM that runs Java tasks (each executor of a"
                    + " Spark cluster) needs the worker's plugin.path locations, with the same plugins, at the same"
                    + " paths: a shared mount, or the same directories on every host.", e);
        }
    }

    /**
     * Why {@code connector.plugin.version} = {@code version} cannot run the connector class, or null when the
     * version sparklink runs (the latest) matches it. Connect's message where no installed version matches.
     */
    public String versionProblem(String classOrAlias, String version) {
        String name = resolve(classOrAlias.trim());
        VersionRange range;
        try {
            range = PluginUtils.connectorVersionRequirement(version);
        } catch (InvalidVersionSpecificationException e) {
            return "String must be a valid maven version spec, but was " + version;
        }
        if (range == null) {
            return null;
        }
        List<String> available = new ArrayList<>();
        PluginDesc<?> newest = null;
        PluginDesc<?> matching = null;
        for (PluginDesc<?> desc : listed) {
            if (desc.className().equals(name) && (desc.type() == PluginType.SOURCE || desc.type() == PluginType.SINK)) {
                available.add(desc.version());
                newest = desc;
                if (range.containsVersion(desc.encodedVersion())) {
                    matching = desc;
                }
            }
        }
        if (matching == null) {
            return String.format("Plugin %s not found that matches the version range %s, available versions: %s",
                    name, range, available);
        }
        if (matching != newest) {
            return "connector.plugin.version " + version + " names version " + matching.version() + " of " + name
                    + ", but this worker runs only the latest installed version of a plugin (" + newest.version()
                    + "); remove the setting or ask for " + newest.version();
        }
        return null;
    }

    /** A class seen from a plugin's class loader (e.g. a connector's task class). */
    public Class<?> classFrom(ClassLoader pluginLoader, String name) throws ClassNotFoundException {
        return Class.forName(name, false, pluginLoader);
    }

    /** A new instance of a plugin class, made with its own loader as the thread's context loader (KAFKA-8340). */
    public <T> T newInstance(Class<? extends T> klass) {
        try (Swap ignored = Swap.to(klass.getClassLoader())) {
            return klass.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new ConnectException("Instantiation error of " + klass.getName(), e);
        }
    }

    public DelegatingClassLoader delegatingLoader() {
        return loader;
    }

    /** Whether a class name (or alias) is a plugin of this set (or of the host's own class path). */
    public boolean knows(String classOrAlias) {
        return names.contains(resolve(classOrAlias.trim()));
    }
}
