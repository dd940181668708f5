package io.sparklink.connect.bridge;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.AbstractConfiguration;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.ConfigurationSource;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.apache.logging.log4j.core.impl.Log4jContextFactory;

/**
 * The Log4j context that the Connect host's classes (Connect's runtime, the host, every plugin, through SLF4J) log
 * through, made with the host's loader (HostLoader). Log4j picks a context by the logging class's loader, or the
 * nearest parent's, and the host's loader sits beside Spark's, so the host needs a context of its own. Its lines go
 * to Spark's context as it is at the time of each line: the appenders of the logger Spark's configuration has for
 * that name (the root logger's, most often), so they land where Spark's own lines land (the executor's stderr, the
 * worker's log in local mode) in Spark's layout, MDC included.
 *
 * <p>Levels: INFO and above, as Connect's default logging has it, unless Spark's configuration names a level for
 * the logger or a parent name (sparklink's own driver configuration quiets org.apache.kafka, for instance); Spark's
 * root level does not apply, so a driver set to warnings still shows a Java task's INFO lines.
 *
 * <p>Log4j's context selector holds contexts only weakly: the context is kept by the HostLoader it belongs to. A
 * context nothing held was collected by the first garbage collection before a host class took a logger (on a busy
 * executor, often), and Log4j then made a new one with its defaults (errors only, so the task's lines vanished).
 */
final class HostLogging {
    private HostLogging() {
    }

    /** The host loader's context, started; null where Log4j's core is not the logging backend. */
    static LoggerContext contextFor(ClassLoader hostLoader) {
        if (!(LogManager.getFactory() instanceof Log4jContextFactory factory)) {
            return null;
        }
        // The context Spark's own classes log through.
        org.apache.logging.log4j.spi.LoggerContext spark =
                LogManager.getContext(org.apache.spark.SparkContext.class.getClassLoader(), false);
        if (!(spark instanceof LoggerContext sparkContext)) {
            return null;
        }
        LoggerContext context = factory.getContext(HostLogging.class.getName(), hostLoader, null, false,
                new HostConfiguration(sparkContext));
        if (context == sparkContext || !(context.getConfiguration() instanceof HostConfiguration)) {
            System.err.println("sparklink: the Connect host's classes log through Log4j context " + context.getName()
                    + ", which another part of this JVM configured");
        }
        return context;
    }

    /** Root at INFO, with one appender: Spark's context. */
    private static final class HostConfiguration extends AbstractConfiguration {
        private final LoggerContext spark;

        HostConfiguration(LoggerContext spark) {
            super(null, ConfigurationSource.NULL_SOURCE);
            this.spark = spark;
            setName("sparklink-connect-host");
        }

        @Override
        protected void doConfigure() {
            ToSpark toSpark = new ToSpark(spark);
            addAppender(toSpark);
            LoggerConfig root = getRootLogger();
            root.setLevel(Level.INFO);
            root.addAppender(toSpark, null, null);
        }
    }

    /** Hands each event to the logger config Spark's context has for its name, which calls Spark's appenders. */
    private static final class ToSpark extends AbstractAppender {
        private final LoggerContext spark;

        ToSpark(LoggerContext spark) {
            super("spark", null, null, true, Property.EMPTY_ARRAY);
            this.spark = spark;
        }

        @Override
        public void append(LogEvent event) {
            Configuration config = spark.getConfiguration();
            LoggerConfig target = config.getLoggerConfig(event.getLoggerName());
            Level level = target.getLevel();
            boolean named = target != config.getRootLogger();
            if (level == Level.OFF || (named && !event.getLevel().isMoreSpecificThan(level))) {
                return;
            }
            target.log(event);
        }
    }
}
