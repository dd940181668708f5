package io.sparklink.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, setting permissions through java.nio.
 *
 * <p>Without Hadoop's native library (PySpark ships none) RawLocalFileSystem sets a permission by
 * starting a {@code chmod} process, and it does so for every file it creates and for its checksum
 * file. A streaming query writes two such files per micro-batch into its checkpoint, so each query
 * started four processes a second; on two cores that was a third of the JVM's CPU for connectors
 * writing one record a second. The permission bits set here are the same ones.
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
    PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
  };

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission.toShort()));
  }

  /** The rwx bits of a mode; the sticky, setuid and setgid bits have no java.nio form and are left as they are. */
  static Set<PosixFilePermission> posix(short mode) {
    Set<PosixFilePermission> out = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        out.add(BITS[bit]);
      }
    }
    return out;
  }
}
