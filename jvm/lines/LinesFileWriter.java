package io.sparklink.spark;

import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark batch writer that appends one string column to a local file, one line per row: the file
 * sink's data path when its Spark tasks run in the worker's own JVM (a local master). Rows go from
 * Spark's reader straight to the file, where handing them to Python as Arrow cost as much again as
 * reading them from Kafka.
 *
 * <p>Use: {@code df.write.format("io.sparklink.spark.LinesFileWriter").option("path", file).mode("append").save()}
 * on a DataFrame of one string column. A null row is written as {@code null}; a value that is not
 * valid UTF-8 has each invalid sequence replaced by U+FFFD. Each Spark task appends whole lines in
 * chunks of about 1 MiB, one chunk at a time per file in this JVM, and syncs the file when it commits.
 * A task that fails after a chunk has left those lines in the file: the batch is written again, so
 * lines are written at least once, as with any Connect sink.
 *
 * <p>The file's directory must exist: nothing is created but the file itself. Where it may be is the
 * worker's rule (sparklink.api.files), checked here again before the file is opened: option
 * {@code sparklink.protected.paths} lists resolved paths no file may be under, and
 * {@code sparklink.allowed.paths}, when set, the directories it must be under (NUL-separated each).
 * The file is opened without following a symlink at its own name.
 */
public final class LinesFileWriter implements TableProvider {
  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return new StructType();
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true; // the table's schema is the DataFrame's
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    if (schema.fields().length != 1 || !schema.fields()[0].dataType().equals(DataTypes.StringType)) {
      throw new IllegalArgumentException(
          "io.sparklink.spark.LinesFileWriter writes one string column; got " + schema.simpleString()
              + ". Select a single column cast to STRING.");
    }
    return new LinesTable(schema);
  }

  private static final class LinesTable implements Table, SupportsWrite {
    private final StructType schema;

    LinesTable(StructType schema) {
      this.schema = schema;
    }

    @Override
    public String name() {
      return "sparklink-lines";
    }

    @Override
    @SuppressWarnings("deprecation") // columns() derives from it
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_WRITE);
    }

    @Override
    public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
      String path = info.options().get("path");
      if (path == null || path.isEmpty()) {
        throw new IllegalArgumentException("io.sparklink.spark.LinesFileWriter needs option(\"path\", <file>)");
      }
      Rules rules = new Rules(info.options().get(PROTECTED), info.options().get(ALLOWED));
      return new WriteBuilder() {
        @Override
        public Write build() {
          return new Write() {
            @Override
            public BatchWrite toBatch() {
              return new Append(path, rules);
            }
          };
        }
      };
    }
  }

  static final String PROTECTED = "sparklink.protected.paths";
  static final String ALLOWED = "sparklink.allowed.paths";

  /** Where the file may be: no protected path above it, an allowed directory above it when any is set. */
  static final class Rules implements Serializable {
    private static final long serialVersionUID = 1L;
    private final String protectedPaths;
    private final String allowedPaths;

    Rules(String protectedPaths, String allowedPaths) {
      this.protectedPaths = protectedPaths == null ? "" : protectedPaths;
      this.allowedPaths = allowedPaths;
    }

    private static List<Path> paths(String joined) {
      List<Path> out = new ArrayList<>();
      for (String part : joined.split("\0")) {
        if (!part.isEmpty()) {
          out.add(Paths.get(part));
        }
      }
      return out;
    }

    /** The file's real path (its directory resolved, and the file too if it exists), checked. */
    Path resolve(String file) throws IOException {
      Path absolute = Paths.get(file).toAbsolutePath().normalize();
      Path parent = absolute.getParent();
      if (parent == null || absolute.getFileName() == null) {
        throw new IOException(file + " is not a file path");
      }
      Path real;
      try {
        real = parent.toRealPath().resolve(absolute.getFileName());
      } catch (NoSuchFileException e) {
        throw new IOException("the directory " + parent + " of " + file + " does not exist: connectors do not "
            + "create directories", e);
      }
      if (Files.exists(real)) {
        real = real.toRealPath();
      } else if (Files.isSymbolicLink(real)) {
        throw new IOException(file + " is a symbolic link to a missing file: the writer does not follow it");
      }
      for (Path root : paths(protectedPaths)) {
        if (real.startsWith(root)) {
          throw new IOException(file + " is inside the worker's own installation or Python path (" + root
              + "): connectors never write there");
        }
      }
      if (allowedPaths != null) {
        boolean allowed = false;
        for (Path root : paths(allowedPaths)) {
          allowed |= real.startsWith(root);
        }
        if (!allowed) {
          throw new IOException(file + " is outside the worker's allowed paths (sparklink.file.allowed.paths)");
        }
      }
      return real;
    }
  }

  private static final class Append implements BatchWrite {
    private final String path;
    private final Rules rules;

    Append(String path, Rules rules) {
      this.path = path;
      this.rules = rules;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      return new Factory(path, rules);
    }

    // Each task's lines are in the file once it commits; there is nothing left to do for the job.
    @Override
    public void commit(WriterCommitMessage[] messages) {}

    @Override
    public void abort(WriterCommitMessage[] messages) {}
  }

  private static final class Factory implements DataWriterFactory, Serializable {
    private static final long serialVersionUID = 1L;
    private final String path;
    private final Rules rules;

    Factory(String path, Rules rules) {
      this.path = path;
      this.rules = rules;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
      return new Lines(path, rules);
    }
  }

  private static final class Written implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    static final Written INSTANCE = new Written();
  }

  /** One monitor per file, so that two tasks of this JVM never write a chunk at the same time. */
  private static final Map<String, Object> FILE_MONITORS = new ConcurrentHashMap<>();

  private static final int CHUNK_BYTES = 1 << 20;
  private static final UTF8String NULL_LINE = UTF8String.fromString("null");
  private static final long HIGH_BITS = 0x8080808080808080L;

  private static final class Lines implements DataWriter<InternalRow> {
    private final Path path;
    private final Rules rules;
    private final Object monitor;
    private FileChannel channel;
    private byte[] buffer = new byte[CHUNK_BYTES + 8192];
    private int size;

    Lines(String file, Rules rules) {
      path = Paths.get(file).toAbsolutePath();
      this.rules = rules;
      monitor = FILE_MONITORS.computeIfAbsent(path.toString(), key -> new Object());
    }

    @Override
    public void write(InternalRow row) throws IOException {
      UTF8String value = row.isNullAt(0) ? NULL_LINE : row.getUTF8String(0);
      if (!ascii(value)) {
        value = value.makeValid();
      }
      int line = value.numBytes() + 1;
      if (size + line > buffer.length) {
        flush();
        if (line > buffer.length) {
          buffer = new byte[line];
        }
      }
      value.writeToMemory(buffer, Platform.BYTE_ARRAY_OFFSET + size);
      size += line;
      buffer[size - 1] = '\n';
      if (size >= CHUNK_BYTES) {
        flush();
      }
    }

    /** Whether every byte is below 0x80: such a value is valid UTF-8, and most values are. */
    private static boolean ascii(UTF8String value) {
      Object base = value.getBaseObject();
      long offset = value.getBaseOffset();
      int n = value.numBytes();
      int i = 0;
      for (; i + 8 <= n; i += 8) {
        if ((Platform.getLong(base, offset + i) & HIGH_BITS) != 0) {
          return false;
        }
      }
      for (; i < n; i++) {
        if (Platform.getByte(base, offset + i) < 0) {
          return false;
        }
      }
      return true;
    }

    private void flush() throws IOException {
      if (size == 0) {
        return;
      }
      if (channel == null) {
        Path real = rules.resolve(path.toString());
        channel = FileChannel.open(real, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND,
            LinkOption.NOFOLLOW_LINKS);
      }
      ByteBuffer bytes = ByteBuffer.wrap(buffer, 0, size);
      synchronized (monitor) {
        while (bytes.hasRemaining()) {
          channel.write(bytes);
        }
      }
      size = 0;
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      flush();
      if (channel != null) {
        channel.force(false);
      }
      return Written.INSTANCE;
    }

    @Override
    public void abort() {
      size = 0;
    }

    @Override
    public void close() throws IOException {
      if (channel != null) {
        channel.close();
      }
    }
  }
}
