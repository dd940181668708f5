package io.sparklink.connect.host;

import java.io.PrintWriter;
import java.io.StringWriter;

/** How Java failures are told to the worker: a one-line chain of causes, or Connect's full trace. */
final class Errors {
    private Errors() {
    }

    /** "ExceptionClass: message; caused by ..." for each cause, for a log line or a REST message. */
    static String chain(Throwable error) {
        StringBuilder out = new StringBuilder();
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (out.length() > 0) {
                out.append("; caused by ");
            }
            out.append(t.getClass().getName());
            if (t.getMessage() != null) {
                out.append(": ").append(t.getMessage());
            }
        }
        return out.toString();
    }

    /** The full stack trace, as Connect puts it in a FAILED status (ConnectorStatus trace). */
    static String trace(Throwable error) {
        StringWriter out = new StringWriter();
        error.printStackTrace(new PrintWriter(out));
        return out.toString();
    }
}
