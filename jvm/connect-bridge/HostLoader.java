package io.sparklink.connect.bridge;

import java.io.File;
import java.lang.reflect.Constructor;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The class loader of the Connect host: Apache Kafka Connect's runtime (connect-runtime, connect-api,
 * kafka-clients 4.x, ...) and sparklink's host code, isolated from Spark's class path, which carries
 * Spark's own kafka-clients (3.9). Its parent is the JDK's platform loader, so nothing of Spark leaks in,
 * except logging: slf4j and Log4j are taken from Spark's loader, and the classes loaded here log through a
 * Log4j context of their own that hands each line to Spark's (HostLogging), so Connect's and the plugins' logs
 * go where the driver's (or executor's) logs go. Connect's own isolation (a PluginClassLoader per plugin,
 * plugin classes first) is built inside it by the host.
 *
 * One loader per class path and JVM: the driver and, in local mode, the executors share it, so a
 * plugin's classes are loaded once.
 */
public final class HostLoader extends URLClassLoader {
    static {
        ClassLoader.registerAsParallelCapable();
    }

    private static final String[] FROM_SPARK = {"org.slf4j.", "org.apache.logging.log4j."};
    private static final String HOST_CLASS = "io.sparklink.connect.host.Host";
    private static final Map<String, Object> HOSTS = new ConcurrentHashMap<>();

    private final ClassLoader spark;
    /** The Log4j context of the classes loaded here, held for as long as they are (Log4j holds it weakly). */
    private Object logging;

    private HostLoader(URL[] urls, ClassLoader spark) {
        super("sparklink-connect-host", urls, ClassLoader.getPlatformClassLoader());
        this.spark = spark;
    }

    /**
     * The host object (io.sparklink.connect.host.Host) of this JVM for a class path (entries separated by
     * the path separator): made once, then shared.
     */
    public static Object host(String classPath) {
        return HOSTS.computeIfAbsent(classPath, HostLoader::newHost);
    }

    private static Object newHost(String classPath) {
        List<URL> urls = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.isBlank()) {
                continue;
            }
            File file = new File(entry);
            if (!file.exists()) {
                throw new IllegalStateException("the Connect host's class path names " + entry + ", which does not exist"
                        + " on this machine (on a Spark cluster, every executor needs sparklink's jars at the same path)");
            }
            try {
                urls.add(file.toURI().toURL());
            } catch (MalformedURLException e) {
                throw new IllegalArgumentException(entry, e);
            }
        }
        HostLoader loader = new HostLoader(urls.toArray(new URL[0]), HostLoader.class.getClassLoader());
        loader.logging = HostLogging.contextFor(loader);
        Thread thread = Thread.currentThread();
        ClassLoader saved = thread.getContextClassLoader();
        thread.setContextClassLoader(loader);
        try {
            Constructor<?> constructor = Class.forName(HOST_CLASS, true, loader).getConstructor();
            return constructor.newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot start the Connect host from " + classPath, e);
        } finally {
            thread.setContextClassLoader(saved);
        }
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        for (String prefix : FROM_SPARK) {
            if (name.startsWith(prefix)) {
                return spark.loadClass(name);
            }
        }
        return super.loadClass(name, resolve);
    }
}
