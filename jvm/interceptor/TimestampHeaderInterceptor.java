package io.sparklink.mirror;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Sets each record's timestamp from a carrier header, then removes that header.
 *
 * Spark's Kafka writer (4.2) has no timestamp column, so sparklink's MirrorMaker tasks append one
 * header, named {@link #HEADER}, holding the source record's timestamp in epoch milliseconds as
 * decimal ASCII. This interceptor runs inside the producer (in the JVM, before serialisation):
 * it strips the last header with that name and rebuilds the record with that timestamp, so the
 * target sees the source's headers and timestamp unchanged. Records without the header pass through.
 */
public class TimestampHeaderInterceptor implements ProducerInterceptor<byte[], byte[]> {
    public static final String HEADER = "__sparklink.timestamp";

    @Override
    public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
        Header[] headers = record.headers().toArray();
        int carrier = CarrierHeaders.last(headers, HEADER);
        if (carrier < 0) {
            return record;
        }
        Long timestamp = null;
        byte[] raw = headers[carrier].value();
        if (raw != null) {
            long parsed = Long.parseLong(new String(raw, StandardCharsets.US_ASCII));
            // A negative timestamp means "none" (pre-0.10 record formats); let the producer stamp it.
            timestamp = parsed >= 0 ? parsed : null;
        }
        RecordHeaders kept = CarrierHeaders.without(headers, carrier);
        return new ProducerRecord<>(record.topic(), record.partition(), timestamp, record.key(), record.value(), kept);
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
    }

    @Override
    public void close() {
    }

    @Override
    public void configure(Map<String, ?> configs) {
    }
}
