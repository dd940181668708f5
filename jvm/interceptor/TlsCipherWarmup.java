package io.sparklink.kafka;

import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;

import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Runs the cipher calls of a TLS 1.3 record, AES-GCM over heap {@link ByteBuffer}s as Kafka's
 * {@code SslTransportLayer} passes them, until the JIT has had them hot enough to compile, so that the
 * Spark JVM's Kafka clients encrypt and decrypt with HotSpot's AES and GHASH intrinsics from their first
 * records.
 *
 * <p>Why: HotSpot uses the carry-less-multiply GHASH stub and the AES counter-mode stub only inside
 * C2-compiled callers. A Spark JVM compiles thousands of methods as its first queries start, and with one
 * C2 compiler thread (two cores) the record cipher's callers waited minutes in that queue: a profile of a
 * SASL_SSL mirror showed GHASH in plain Java ({@code GHASH.processBlock}) and {@code GCMEncrypt.doFinal}
 * still at tier 3 when the run ended. Apache MirrorMaker 2's JVM has far less to compile and reaches the
 * intrinsics early. Called once per JVM by the worker whose Kafka clients use TLS
 * (worker/execution/kafka_io.py); it runs on a daemon thread of its own and returns at once.
 */
public final class TlsCipherWarmup {
    /** TLS's largest record plaintext, and two sizes that end in a partial block (the final-block path). */
    private static final int[] SIZES = {16384, 1037, 4109};
    private static final int TAG_BITS = 128;
    private static final int AAD_BYTES = 5; // a TLS 1.3 record header
    private static volatile Thread running;

    private TlsCipherWarmup() {
    }

    /** Start the warm-up (once per JVM) for {@code records} records each way; false if it ran already. */
    public static synchronized boolean start(int records) {
        if (running != null) {
            return false;
        }
        running = new Thread(() -> run(records), "sparklink-tls-warm-up");
        running.setDaemon(true);
        running.setPriority(Thread.MIN_PRIORITY);
        running.start();
        return true;
    }

    /** Wait up to {@code millis} for a started warm-up to finish; true once it has. */
    public static boolean finished(long millis) throws InterruptedException {
        Thread thread = running;
        if (thread == null) {
            return false;
        }
        thread.join(millis);
        return !thread.isAlive();
    }

    static void run(int records) {
        try {
            SecureRandom random = new SecureRandom();
            byte[] raw = new byte[32]; // AES-256, TLS_AES_256_GCM_SHA384's key (the JDK's first choice)
            random.nextBytes(raw);
            SecretKeySpec key = new SecretKeySpec(raw, "AES");
            byte[] iv = new byte[12];
            random.nextBytes(iv);
            byte[] aad = new byte[AAD_BYTES];
            Cipher encrypt = Cipher.getInstance("AES/GCM/NoPadding");
            Cipher decrypt = Cipher.getInstance("AES/GCM/NoPadding");
            ByteBuffer plain = ByteBuffer.allocate(SIZES[0]);
            ByteBuffer sealed = ByteBuffer.allocate(SIZES[0] + TAG_BITS / 8);
            ByteBuffer opened = ByteBuffer.allocate(SIZES[0]);
            for (int i = 0; i < records; i++) {
                int size = SIZES[i % SIZES.length];
                // A fresh nonce per record, as TLS 1.3 derives one from the record's sequence number.
                iv[iv.length - 1] = (byte) i;
                iv[iv.length - 2] = (byte) (i >>> 8);
                iv[iv.length - 3] = (byte) (i >>> 16);
                GCMParameterSpec spec = new GCMParameterSpec(TAG_BITS, iv);
                encrypt.init(Cipher.ENCRYPT_MODE, key, spec);
                encrypt.updateAAD(aad);
                plain.clear().limit(size);
                sealed.clear();
                encrypt.doFinal(plain, sealed);
                sealed.flip();
                decrypt.init(Cipher.DECRYPT_MODE, key, spec);
                decrypt.updateAAD(aad);
                opened.clear();
                decrypt.doFinal(sealed, opened);
            }
        } catch (GeneralSecurityException | RuntimeException e) {
            // An optimisation only: the clients work the same without it.
        }
    }
}
