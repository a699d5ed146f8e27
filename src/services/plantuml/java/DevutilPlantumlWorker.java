// devutil PlantUML worker: one warm JVM that renders diagrams with the jar's API, speaking a
// length-prefixed protocol on stdin/stdout (see src/services/plantuml/protocol.ts).
//
// Request frame:  u32 length, u32 id, then "op\tformat\tindex\tdark\n" and the UTF-8 source.
// Response frame: u32 length, u32 id, u32 meta length, meta lines "key\tvalue" (UTF-8), the body.
// Requests run on -Ddevutil.threads render threads; replies come back in completion order.

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import net.sourceforge.plantuml.BlockUml;
import net.sourceforge.plantuml.ErrorUml;
import net.sourceforge.plantuml.FileFormat;
import net.sourceforge.plantuml.FileFormatOption;
import net.sourceforge.plantuml.SourceStringReader;
import net.sourceforge.plantuml.core.Diagram;
import net.sourceforge.plantuml.core.ImageData;
import net.sourceforge.plantuml.error.PSystemError;
import net.sourceforge.plantuml.klimt.color.ColorMapper;
import net.sourceforge.plantuml.syntax.LanguageDescriptor;
import net.sourceforge.plantuml.version.Version;

public final class DevutilPlantumlWorker {
    private static final int MAX_REQUEST = 64 * 1024 * 1024;

    private static final class Reply {
        final StringBuilder meta = new StringBuilder();
        byte[] body = new byte[0];

        void put(String key, Object value) {
            meta.append(key).append('\t').append(clean(String.valueOf(value))).append('\n');
        }
    }

    /** Header values travel on one line: no tabs, no line breaks. */
    private static String clean(String s) {
        return s.replace('\t', ' ').replace('\r', ' ').replace('\n', ' ');
    }

    public static void main(String[] args) throws Exception {
        // The engine may print to System.out; the protocol owns the real stdout.
        final OutputStream raw = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        final DataOutputStream out = new DataOutputStream(raw);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
        final DataInputStream in = new DataInputStream(System.in);

        watchParent();
        // Announce readiness with the engine facts the server needs (version, build time).
        final Reply hello = new Reply();
        hello.put("status", "ok");
        info(hello);
        write(out, 0, hello);

        // The engine renders concurrently (plantuml-server and PicoWeb run it on many threads);
        // threads overlap the waits on `dot` and keep every core busy with one JVM's memory.
        final int threads = Math.max(1, Integer.getInteger("devutil.threads", 1));
        final AtomicInteger active = new AtomicInteger();
        final ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            final Thread t = new Thread(r, "devutil-render");
            t.setDaemon(true);
            return t;
        });

        int warm = 0;
        while (true) {
            // Idle time warms the engine up (class loading, JIT) one small render at a time, and
            // stops as soon as work arrives: a fresh worker answers its first request at once.
            while (warm < WARM_UP.length * 2 && active.get() == 0 && in.available() == 0) warmUp(warm++);
            final int len;
            try {
                len = in.readInt();
            } catch (EOFException e) {
                // The server went away (even by SIGKILL): exit even if engine threads linger.
                System.exit(0);
                return;
            }
            if (len < 4 || len > MAX_REQUEST) {
                System.err.println("devutil worker: bad frame length " + len);
                System.exit(2);
            }
            final int id = in.readInt();
            final byte[] frame = new byte[len - 4];
            in.readFully(frame);
            active.incrementAndGet();
            pool.execute(() -> {
                final Reply reply = new Reply();
                boolean fatal = false;
                try {
                    handle(frame, reply);
                } catch (Throwable t) {
                    reply.meta.setLength(0);
                    reply.body = new byte[0];
                    reply.put("status", "exception");
                    reply.put("exception", t.getClass().getName() + ": " + t.getMessage());
                    fatal = t instanceof VirtualMachineError;
                }
                try {
                    write(out, id, reply);
                } catch (java.io.IOException e) {
                    System.exit(1); // the server closed the pipe
                }
                active.decrementAndGet();
                if (fatal) System.exit(3); // the heap may be broken: let the pool replace us
            });
        }
    }

    /** Exits when the server process is gone (even killed mid-render), so no JVM is orphaned. */
    private static void watchParent() {
        final long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        final Thread t = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                final long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
                if (now != parent) Runtime.getRuntime().halt(0);
            }
        }, "devutil-parent-watch");
        t.setDaemon(true);
        t.start();
    }

    private static final String[] WARM_UP = {
        "@startuml\nA -> B : warm\n@enduml",
        "@startuml\nclass A\nA --> B\n@enduml",
        "@startuml\nstart\n:warm;\nstop\n@enduml",
    };

    /** Warm-up step `i`: each source of WARM_UP once in PNG, then once in SVG. */
    private static void warmUp(int i) {
        final FileFormat f = i < WARM_UP.length ? FileFormat.PNG : FileFormat.SVG;
        try {
            new SourceStringReader(WARM_UP[i % WARM_UP.length])
                .outputImage(new ByteArrayOutputStream(), 0, new FileFormatOption(f));
        } catch (Throwable t) {
            System.err.println("devutil worker: warm-up failed: " + t);
        }
    }

    private static void write(DataOutputStream out, int id, Reply reply) throws java.io.IOException {
        final byte[] meta = reply.meta.toString().getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
            out.writeInt(8 + meta.length + reply.body.length);
            out.writeInt(id);
            out.writeInt(meta.length);
            out.write(meta);
            out.write(reply.body);
            out.flush();
        }
    }

    private static void info(Reply r) {
        r.put("version", Version.versionString());
        r.put("compileTime", Version.compileTime());
        r.put("java", System.getProperty("java.version"));
    }

    private static void handle(byte[] frame, Reply r) throws Exception {
        int nl = 0;
        while (nl < frame.length && frame[nl] != '\n') nl++;
        final String[] head = new String(frame, 0, nl, StandardCharsets.UTF_8).split("\t", -1);
        final String source = nl < frame.length
            ? new String(frame, nl + 1, frame.length - nl - 1, StandardCharsets.UTF_8)
            : "";
        final String op = head[0];
        final String fmt = head.length > 1 ? head[1] : "png";
        final int index = head.length > 2 && !head[2].isEmpty() ? Integer.parseInt(head[2]) : 0;
        final boolean dark = head.length > 3 && head[3].equals("1");

        switch (op) {
            case "info":
                r.put("status", "ok");
                info(r);
                return;
            case "language": {
                final ByteArrayOutputStream bos = new ByteArrayOutputStream();
                final PrintStream ps = new PrintStream(bos, true, StandardCharsets.UTF_8);
                new LanguageDescriptor().print(ps);
                ps.flush();
                r.put("status", "ok");
                r.body = bos.toByteArray();
                return;
            }
            case "render":
            case "map":
            case "check":
                render(op, fmt, index, dark, source, r);
                return;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    private static FileFormat formatOf(String fmt) {
        switch (fmt) {
            case "svg": return FileFormat.SVG;
            case "txt": return FileFormat.UTXT;
            case "atxt": return FileFormat.ATXT;
            case "eps": return FileFormat.EPS;
            case "epstext": return FileFormat.EPS_TEXT;
            case "pdf": return FileFormat.PDF;
            default: return FileFormat.PNG;
        }
    }

    private static void render(String op, String fmt, int index, boolean dark, String source, Reply r)
            throws Exception {
        SourceStringReader reader = new SourceStringReader(source);
        List<BlockUml> blocks = reader.getBlocks();
        if (blocks.isEmpty()) {
            // Like the server: bare text is tried again inside @startuml/@enduml.
            reader = new SourceStringReader("@startuml\n" + source + "\n@enduml");
            blocks = reader.getBlocks();
        }
        if (blocks.isEmpty()) {
            r.put("status", "nodiagram");
            return;
        }
        // The index counts images across every block and every page (digest section 1).
        Diagram diagram = null;
        int local = index;
        for (BlockUml block : blocks) {
            final Diagram d = block.getDiagram();
            final int n = Math.max(1, d.getNbImages());
            if (local < n) {
                diagram = d;
                break;
            }
            local -= n;
        }
        if (diagram == null) {
            r.put("status", "badindex");
            return;
        }
        final boolean error = diagram instanceof PSystemError;
        r.put("status", error ? "error" : "ok");
        r.put("description", diagram.getDescription().getDescription());
        if (error) {
            for (ErrorUml e : ((PSystemError) diagram).getErrorsUml()) {
                r.put("error", e.getLineLocation().getPosition() + " " + e.getError());
            }
        }
        if (op.equals("check")) return;

        FileFormatOption option = new FileFormatOption(op.equals("map") ? FileFormat.PNG : formatOf(fmt),
            !op.equals("map"));
        if (dark) option = option.withColorMapper(ColorMapper.DARK_MODE);
        final ByteArrayOutputStream bos = new ByteArrayOutputStream(16 * 1024);
        final ImageData data = diagram.exportDiagram(bos, local, option);
        if (data != null) {
            r.put("width", data.getWidth());
            r.put("height", data.getHeight());
        }
        if (op.equals("map")) {
            r.body = data != null && data.containsCMapData()
                ? data.getCMapData("plantuml").getBytes(StandardCharsets.UTF_8)
                : new byte[0];
        } else {
            r.body = bos.toByteArray();
        }
    }
}
