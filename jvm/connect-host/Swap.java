package io.sparklink.connect.host;

/** Sets the thread's context class loader for a block (Connect's LoaderSwap): plugin code runs with its own. */
final class Swap implements AutoCloseable {
    private final ClassLoader saved;

    private Swap(ClassLoader saved) {
        this.saved = saved;
    }

    static Swap to(ClassLoader loader) {
        Thread thread = Thread.currentThread();
        ClassLoader saved = thread.getContextClassLoader();
        thread.setContextClassLoader(loader);
        return new Swap(saved);
    }

    @Override
    public void close() {
        Thread.currentThread().setContextClassLoader(saved);
    }
}
