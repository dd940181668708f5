package io.sparklink.mirror;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The carrier headers sparklink's MirrorMaker tasks append to each record for the producer's
 * interceptors: finding the last one with a name, and the headers without it.
 *
 * <p>The last one is the carrier because tasks append theirs after the source record's own headers,
 * so a source header that happens to share the name survives.
 */
final class CarrierHeaders {
    private CarrierHeaders() {
    }

    /** The index of the last header named {@code key}, or -1. */
    static int last(Header[] headers, String key) {
        for (int i = headers.length - 1; i >= 0; i--) {
            if (key.equals(headers[i].key())) {
                return i;
            }
        }
        return -1;
    }

    /** All headers but the one at {@code index}, in order. */
    static RecordHeaders without(Header[] headers, int index) {
        RecordHeaders kept = new RecordHeaders();
        for (int i = 0; i < headers.length; i++) {
            if (i != index) {
                kept.add(headers[i]);
            }
        }
        return kept;
    }
}
