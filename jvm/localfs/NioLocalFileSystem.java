package io.sparklink.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/**
 * Hadoop's checksummed local file system ({@code file:}) over {@link NioRawLocalFileSystem}: the same
 * files and checksum files, without a {@code chmod} process for each. The worker's Spark session
 * names it in {@code fs.file.impl}.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
  }
}
