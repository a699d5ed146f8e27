// devutil PlantUML worker: one warm JVM that renders diagrams with the jar's API, speaking a
// length-prefixed protocol on stdin/stdout (see src/services/diagrams/plantuml/protocol.ts).
//
// Request frame:  u32 length, u32 id, then "op\tformat\tindex\tdark\n" and the UTF-8 source.
// Response frame: u32 length, u32 id, u32 meta length, meta lines "key\tvalue" (UTF-8), the body.
// Requests run on -Ddevutil.threads render threads; replies come back in completion order.
//
// URLs the engine reads (!include of a URL, !includesub, !theme ... from, %load_json, <img:...>)
// never leave this JVM: http(s) connections are answered by the server, which applies the
// allow-list and its address guard, revalidates with ETags and records which URLs a diagram used.
// Fetch frame (out): id = fetch id, meta "status\tfetch" and "url\t<url>".
// Fetched frame (in): id = fetch id, "fetched\t<status>\t<content type>\t0\n" and the body bytes.

import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.SocketTimeoutException;
import java.net.URL;
import java.net.URLConnection;
import java.net.URLStreamHandler;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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

    /** The protocol's stdout, shared by replies and fetch requests (writes lock on it). */
    private static DataOutputStream out;

    public static void main(String[] args) throws Exception {
        // Each `dot` the engine runs (class, component, state... diagrams) is a child process. By
        // default Java 12+ starts one through its helper program (posix_spawn of jspawnhelper, which
        // then execs the command): a second program start per child. vfork execs the command at
        // once: about 0.7 ms less CPU per child (0.1 of it in the JVM; 500 starts of /bin/true,
        // 1.2-1.3 vs 0.6 ms in the children), about 0.3 ms per diagram of the test corpus. It was
        // Linux's default before Java 12; Java 25 deprecates it (a warning on stderr) and later ones
        // remove it, so it is asked for only before 25, and never over a launcher set explicitly.
        if (Runtime.version().feature() < 25 && System.getProperty("jdk.lang.Process.launchMechanism") == null) {
            System.setProperty("jdk.lang.Process.launchMechanism", "VFORK");
        }
        // The engine may print to System.out; the protocol owns the real stdout.
        final OutputStream raw = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        out = new DataOutputStream(raw);
        URL.setURLStreamHandlerFactory(DevutilPlantumlWorker::handlerFor);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
        final DataInputStream in = new DataInputStream(System.in);

        watchParent();
        if (Boolean.getBoolean("devutil.train")) {
            train();
            return;
        }
        // Announce readiness with the engine facts the server needs (version, build time).
        final Reply hello = new Reply();
        hello.put("status", "ok");
        info(hello);
        write(out, 0, hello);

        // The engine renders concurrently (plantuml-server and PicoWeb run it on many threads);
        // threads overlap the waits on `dot` and keep every core busy with one JVM's memory.
        final Renders renders = new Renders(Math.max(1, Integer.getInteger("devutil.threads", 1)));

        // Idle time warms the engine up (class loading, JIT) one small render at a time, on its own
        // thread: a request that arrives meanwhile starts at once instead of waiting for the step
        // in progress, and the next step waits until no request is running. When it is done the
        // server hears "warmed": a worker started to replace another takes work only then.
        final Thread warm = new Thread(() -> {
            try {
                // Work the server queued for this JVM before its hello (the first diagram of a
                // cold start) arrives within a few milliseconds of it: a warm-up render started
                // first would share the cores with that render, the JIT and the server's start.
                Thread.sleep(WARM_DELAY_MS);
            } catch (InterruptedException e) {
                return;
            }
            for (int i = 0; i < WARM_UP.length * 2; i++) {
                try {
                    while (renders.active.get() > 0) Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
                warmUp(i);
            }
            renders.lastBusy = System.nanoTime(); // what the warm-up grew is collected after it
            final Reply warmed = new Reply();
            warmed.put("status", "warmed");
            send(out, 0, warmed);
        }, "devutil-warm-up");
        warm.setDaemon(true);
        warm.start();
        renders.startIdleGc();

        while (true) {
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
            // Answers to fetches complete here, not on the render threads those fetches block;
            // cancels and pings too, so they are answered while every render thread is busy.
            if (startsWith(frame, FETCHED)) {
                fetched(id, frame);
            } else if (startsWith(frame, CANCEL)) {
                renders.cancel(id);
            } else if (startsWith(frame, PING)) {
                final Reply pong = new Reply();
                pong.put("status", "pong");
                write(out, id, pong);
            } else {
                renders.submit(id, frame);
            }
        }
    }

    private static final byte[] CANCEL = "cancel\t".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PING = "ping\t".getBytes(StandardCharsets.US_ASCII);
    /** A child process (`dot`) this much older than the render timeout belongs to an abandoned render. */
    private static final long TIMEOUT_MS = Long.getLong("devutil.timeoutMs", 10_000L);
    private static final long STALE_CHILD_MS = TIMEOUT_MS + 2_000L;
    /** Renders stopped this long: the heap is collected and shrunk once (0: never). */
    private static final long IDLE_GC_MS = Long.getLong("devutil.idleGcMs", 30_000L);
    /** The warm-up's first step waits this long after the hello (see main). */
    private static final long WARM_DELAY_MS = Long.getLong("devutil.warmDelayMs", 100L);

    private static void shrinkHeap() {
        final com.sun.management.HotSpotDiagnosticMXBean vm =
            java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
        String min = null;
        String max = null;
        try {
            min = vm.getVMOption("MinHeapFreeRatio").getValue();
            max = vm.getVMOption("MaxHeapFreeRatio").getValue();
            vm.setVMOption("MinHeapFreeRatio", "0"); // first: Max may never go under Min
            vm.setVMOption("MaxHeapFreeRatio", "10");
            System.gc();
        } catch (RuntimeException e) {
            System.gc(); // a JVM without the flags: a plain collection
        } finally {
            try {
                if (max != null) vm.setVMOption("MaxHeapFreeRatio", max);
                if (min != null) vm.setVMOption("MinHeapFreeRatio", min);
            } catch (RuntimeException e) {
                // left as they were set: renders then collect a little more often
            }
        }
    }

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();

    /** One request on a render thread. */
    private static final class Task {
        final int id;
        final byte[] frame;
        volatile Thread thread;
        volatile long tid;
        volatile boolean abandoned;

        Task(int id, byte[] frame) {
            this.id = id;
            this.frame = frame;
        }
    }

    /**
     * The render threads. The server caps the renders it has in flight at the thread count; a render
     * it gave up on (its deadline passed) is abandoned here: the thread is interrupted (the engine
     * rarely checks), lowered to the least CPU priority by the server (it runs until the engine
     * returns, so its `dot` children older than the timeout are killed), replaced by a new thread
     * at once, and ends when its render does instead of going back to work at that priority.
     * Stopping the thread is not an option: Thread.stop throws on Java 20+, and on 17 a thread
     * stopped inside a class initializer breaks that class for every later render (measured:
     * NoClassDefFoundError "Could not initialize class ...CommandCreoleBuilder"). An interrupt that
     * reaches an initializer doing interruptible I/O can do the same: such a render is answered as
     * "broken" (see linkage), and the server retires the JVM.
     */
    private static final class Renders {
        final LinkedBlockingQueue<Task> queue = new LinkedBlockingQueue<>();
        final ConcurrentHashMap<Integer, Task> running = new ConcurrentHashMap<>();
        /** Renders in flight that are not abandoned (the warm-up waits for none). */
        final AtomicInteger active = new AtomicInteger();
        /** When the last render ended (or was submitted); the idle collection waits from there. */
        volatile long lastBusy = System.nanoTime();

        Renders(int threads) {
            for (int i = 0; i < threads; i++) startThread();
            final Thread reaper = new Thread(this::reap, "devutil-reaper");
            reaper.setDaemon(true);
            reaper.start();
        }

        void submit(int id, byte[] frame) {
            lastBusy = System.nanoTime();
            active.incrementAndGet();
            queue.add(new Task(id, frame));
        }

        private void startThread() {
            final Thread t = new Thread(this::loop, "devutil-render");
            t.setDaemon(true);
            t.start();
        }

        private void loop() {
            final long tid = threadId();
            while (true) {
                final Task task;
                try {
                    task = queue.take();
                } catch (InterruptedException e) {
                    continue; // an interrupt meant for a render that ended first
                }
                task.tid = tid;
                task.thread = Thread.currentThread();
                running.put(task.id, task);
                final Reply reply = new Reply();
                final long allocated0 = THREADS.getCurrentThreadAllocatedBytes();
                try {
                    handle(task.frame, reply);
                } catch (OutOfMemoryError e) {
                    // Not fatal: the render that failed lets go of what it held. The server hears
                    // how much this render allocated, to tell the diagram that needs the memory
                    // from one that was unlucky enough to ask for a little when it was all gone.
                    exception(reply, e);
                    reply.put("oom", THREADS.getCurrentThreadAllocatedBytes() - allocated0);
                } catch (VirtualMachineError e) {
                    if (!(e instanceof StackOverflowError)) halt(e); // the JVM may be broken
                    exception(reply, e);
                } catch (Throwable t) {
                    exception(reply, t);
                    final String broken = linkage(t);
                    if (broken != null) reply.put("broken", broken);
                }
                synchronized (task) {
                    running.remove(task.id);
                    if (!task.abandoned) active.decrementAndGet();
                }
                lastBusy = System.nanoTime();
                Thread.interrupted(); // an interrupt that came too late must not reach the next render
                send(out, task.id, reply);
                if (task.abandoned) return; // its replacement is running; this thread's priority is low
            }
        }

        /** The server gave up on render `id`: see the class comment. */
        void cancel(int id) {
            final Task task = running.get(id);
            if (task == null) return; // already answered (the answer is on its way) or never started
            synchronized (task) {
                if (task.abandoned || !running.containsKey(id)) return;
                task.abandoned = true;
                active.decrementAndGet();
            }
            startThread();
            task.thread.interrupt();
            final Reply r = new Reply();
            r.put("status", "abandoned");
            r.put("tid", task.tid);
            send(out, id, r);
        }

        /**
         * Gives the heap back once renders have stopped for IDLE_GC_MS (issue 35): a burst grows
         * the heap (committed and resident) to several times what the engine keeps live, and the
         * serial collector only shrinks it when a full collection finds most of it free. So, once
         * per idle spell, a full collection runs with the shrink thresholds at their lowest (they
         * are manageable flags; -XX:-ShrinkHeapInSteps lets one collection shrink all the way),
         * and the thresholds go back for the renders to come. The heap never goes under -Xms.
         * The server hears the committed heap before and after.
         */
        void startIdleGc() {
            if (IDLE_GC_MS <= 0) return;
            final Thread t = new Thread(() -> {
                long done = lastBusy; // idle since the start: the warm-up's end counts as busy
                while (true) {
                    try {
                        Thread.sleep(Math.min(1000L, IDLE_GC_MS));
                    } catch (InterruptedException e) {
                        return;
                    }
                    final long busy = lastBusy;
                    if (busy == done || active.get() > 0 || !queue.isEmpty()) continue;
                    if (System.nanoTime() - busy < IDLE_GC_MS * 1_000_000L) continue;
                    done = busy;
                    final Reply r = new Reply();
                    r.put("status", "idle-gc");
                    r.put("heapBefore", Runtime.getRuntime().totalMemory());
                    shrinkHeap();
                    r.put("heapAfter", Runtime.getRuntime().totalMemory());
                    send(out, 0, r);
                }
            }, "devutil-idle-gc");
            t.setDaemon(true);
            t.start();
        }

        /** Kills the `dot` processes of abandoned renders (see STALE_CHILD_MS). */
        private void reap() {
            while (true) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
                boolean any = false;
                for (Task t : running.values()) any |= t.abandoned;
                if (!any) continue;
                final long now = System.currentTimeMillis();
                ProcessHandle.current().children().forEach(p -> {
                    final long started = p.info().startInstant().map(i -> i.toEpochMilli()).orElse(now);
                    if (now - started > STALE_CHILD_MS) {
                        p.descendants().forEach(ProcessHandle::destroyForcibly);
                        p.destroyForcibly();
                    }
                });
            }
        }
    }

    private static void exception(Reply reply, Throwable t) {
        reply.meta.setLength(0);
        reply.body = new byte[0];
        reply.put("status", "exception");
        reply.put("exception", t.getClass().getName() + ": " + t.getMessage());
        reply.put("at", frames(t));
    }

    /**
     * Where `t` was thrown: the first frames of its innermost cause, "class.method:line" joined
     * by " < ". Engine exceptions often carry no message (a layout whose `dot` failed ends in a
     * bare IllegalStateException, and so do smetana's C-port helpers), so the frames are what tells
     * one from another in the log.
     */
    static String frames(Throwable t) {
        for (int i = 0; i < 16 && t.getCause() != null && t.getCause() != t; i++) t = t.getCause();
        final StringBuilder b = new StringBuilder();
        final StackTraceElement[] st = t.getStackTrace();
        for (int i = 0; i < Math.min(st.length, 8); i++) {
            if (i > 0) b.append(" < ");
            b.append(st[i].getClassName()).append('.').append(st[i].getMethodName()).append(':').append(st[i].getLineNumber());
        }
        return b.toString();
    }

    /**
     * The LinkageError in `t`'s cause chain, as "class: message"; null when there is none. A
     * LinkageError (NoClassDefFoundError, ExceptionInInitializerError, UnsatisfiedLinkError ...)
     * means this JVM's class state is broken, not the diagram: a class whose initializer failed
     * (e.g. a thread interrupted inside it, or stopped: see Renders) fails every later use with
     * "Could not initialize class". The server retires this JVM and renders the request again on
     * another (docs/diagrams.md, "Broken JVMs").
     */
    private static String linkage(Throwable t) {
        for (int i = 0; t != null && i < 16; i++, t = t.getCause())
            if (t instanceof LinkageError) return t.getClass().getName() + ": " + t.getMessage();
        return null;
    }

    /**
     * The engine turns a Throwable thrown by a command while parsing into an error diagram that only
     * names it in its text (which a diagram's own text, an !assert message, could imitate); the
     * Throwable itself goes to its java.util.logging logger "com.plantuml", on the parsing thread.
     * This handler keeps the LinkageError among those, per thread, for render() to find.
     */
    private static final ThreadLocal<String> LOGGED_LINKAGE = new ThreadLocal<>();
    /** Held here: the logging framework keeps loggers weakly, and the handler must stay on this one. */
    private static final java.util.logging.Logger ENGINE_LOG = java.util.logging.Logger.getLogger("com.plantuml");

    static {
        ENGINE_LOG.addHandler(new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                final String broken = linkage(record.getThrown());
                if (broken != null) LOGGED_LINKAGE.set(broken);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
    }

    /** The answer for a render that found this JVM broken (see linkage). */
    private static void broken(Reply r, String linkage) {
        r.meta.setLength(0);
        r.body = new byte[0];
        r.put("status", "exception");
        r.put("exception", linkage);
        r.put("broken", linkage);
    }

    private static void halt(Throwable t) {
        System.err.println("devutil worker: " + t);
        Runtime.getRuntime().halt(3);
    }

    /** This thread's kernel id (Linux), which the server lowers the priority of; 0 elsewhere. */
    private static long threadId() {
        try {
            return Long.parseLong(java.nio.file.Files.readSymbolicLink(java.nio.file.Paths.get("/proc/thread-self"))
                .getFileName().toString());
        } catch (Exception e) {
            return 0;
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

    private static final byte[] FETCHED = "fetched\t".getBytes(StandardCharsets.US_ASCII);
    private static final long FETCH_TIMEOUT_MS = Long.getLong("devutil.fetchTimeoutMs", 10_000L);
    private static final AtomicInteger FETCH_IDS = new AtomicInteger();
    private static final ConcurrentHashMap<Integer, CompletableFuture<Fetched>> FETCHES = new ConcurrentHashMap<>();

    private static boolean startsWith(byte[] frame, byte[] prefix) {
        if (frame.length < prefix.length) return false;
        for (int i = 0; i < prefix.length; i++) if (frame[i] != prefix[i]) return false;
        return true;
    }

    private static final class Fetched {
        final int status;
        final String type;
        final byte[] body;

        Fetched(int status, String type, byte[] body) {
            this.status = status;
            this.type = type;
            this.body = body;
        }
    }

    private static void fetched(int id, byte[] frame) {
        int nl = 0;
        while (nl < frame.length && frame[nl] != '\n') nl++;
        final String[] head = new String(frame, 0, nl, StandardCharsets.UTF_8).split("\t", -1);
        final byte[] body = nl < frame.length ? java.util.Arrays.copyOfRange(frame, nl + 1, frame.length) : new byte[0];
        final CompletableFuture<Fetched> f = FETCHES.remove(id);
        if (f == null) return; // timed out meanwhile
        int status = 502;
        try {
            status = Integer.parseInt(head.length > 1 ? head[1] : "502");
        } catch (NumberFormatException e) {
            // keep 502
        }
        f.complete(new Fetched(status, head.length > 2 ? head[2] : "", body));
    }

    /** Asks the server for `url` and waits for its answer (the engine's own timeout also applies). */
    private static Fetched fetch(String url) throws IOException {
        int id;
        do id = FETCH_IDS.incrementAndGet() & 0x7fffffff; while (id == 0);
        final CompletableFuture<Fetched> f = new CompletableFuture<>();
        FETCHES.put(id, f);
        try {
            final Reply r = new Reply();
            r.put("status", "fetch");
            r.put("url", url);
            write(out, id, r);
            return f.get(FETCH_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new SocketTimeoutException("no answer for " + url);
        } catch (InterruptedException | ExecutionException e) {
            throw new IOException("fetch of " + url + " failed", e);
        } finally {
            FETCHES.remove(id);
        }
    }

    /** http and https go to the server; every other scheme (jar:, file:) keeps the JDK's handler. */
    private static URLStreamHandler handlerFor(String protocol) {
        if (!"http".equals(protocol) && !"https".equals(protocol)) return null;
        final int port = "https".equals(protocol) ? 443 : 80;
        return new URLStreamHandler() {
            @Override
            protected URLConnection openConnection(URL u) {
                return new ServerConnection(u);
            }

            @Override
            protected URLConnection openConnection(URL u, Proxy p) {
                return new ServerConnection(u);
            }

            @Override
            protected int getDefaultPort() {
                return port;
            }

            // The JDK compares and hashes URLs by resolved address: no DNS from this JVM, ever.
            @Override
            protected boolean hostsEqual(URL a, URL b) {
                return a.getHost() != null && a.getHost().equalsIgnoreCase(b.getHost());
            }

            @Override
            protected int hashCode(URL u) {
                return u.toExternalForm().hashCode();
            }
        };
    }

    /** A GET answered by the server; what the engine's URL code needs of HttpURLConnection. */
    private static final class ServerConnection extends HttpURLConnection {
        private Fetched got;

        ServerConnection(URL u) {
            super(u);
        }

        @Override
        public void connect() throws IOException {
            if (got != null) return;
            if (!"GET".equals(method)) throw new IOException("only GET is supported for " + url);
            got = fetch(url.toExternalForm());
            responseCode = got.status;
            connected = true;
        }

        @Override
        public int getResponseCode() throws IOException {
            connect();
            return got.status;
        }

        @Override
        public InputStream getInputStream() throws IOException {
            connect();
            if (got.status >= 400) throw new FileNotFoundException(url.toExternalForm());
            return new ByteArrayInputStream(got.body);
        }

        @Override
        public InputStream getErrorStream() {
            return got != null && got.status >= 400 ? new ByteArrayInputStream(got.body) : null;
        }

        @Override
        public String getHeaderField(String name) {
            return got != null && "content-type".equalsIgnoreCase(name) && !got.type.isEmpty() ? got.type : null;
        }

        @Override
        public OutputStream getOutputStream() throws IOException {
            throw new IOException("only GET is supported for " + url);
        }

        @Override
        public void disconnect() {}

        @Override
        public boolean usingProxy() {
            return false;
        }
    }

    private static final String[] WARM_UP = {
        "@startuml\nA -> B : warm\n@enduml",
        "@startuml\nclass A\nA --> B\n@enduml",
        "@startuml\nstart\n:warm;\nstop\n@enduml",
    };

    /** Warm-up step `i`: each source of WARM_UP once in PNG, then once in SVG. */
    private static void warmUp(int i) {
        final FileFormat f = i < WARM_UP.length ? FileFormat.PNG : FileFormat.SVG;
        renderQuietly(WARM_UP[i % WARM_UP.length], f);
    }

    /** What a class-data sharing training run renders: the common diagram types, in each common format. */
    private static final String[] TRAIN = {
        "@startuml\nactor U\nparticipant \"API\" as A\nU -> A : GET /x\nactivate A\nA --> U : 200\nnote right : ok\n@enduml",
        "@startuml\nabstract class S {\n +area() : double\n}\ninterface D\nS <|-- C\nD <|.. C\nC \"1\" *-- \"n\" P\n@enduml",
        "@startuml\nstart\nif (ok?) then (yes)\n :a;\nelse (no)\n :b;\nendif\nwhile (more?)\n :c;\nendwhile\nstop\n@enduml",
        "@startuml\nactor U\n(Log in) as L\nU --> L\n@enduml",
        "@startuml\npackage P {\n [Web] as W\n}\nnode N {\n [API] - HTTP\n}\ndatabase DB\nW --> HTTP\n[API] --> DB\n@enduml",
        "@startuml\n[*] --> Idle\nIdle --> Busy : go\nstate Busy {\n [*] --> Work\n}\nBusy --> [*]\n@enduml",
        "@startuml\nobject o\nmap m {\n k => v\n}\no --> m\n@enduml",
        "@startmindmap\n* root\n** a\n*** b\n** c\n@endmindmap",
        "@startgantt\n[A] requires 5 days\n[B] requires 3 days\n[B] starts at [A]'s end\n@endgantt",
        "@startjson\n{\"a\": [1, 2], \"b\": {\"c\": true}}\n@endjson",
        "@startsalt\n{\n Login | \"user\"\n [ OK ]\n}\n@endsalt",
        "@startuml\n!include <C4/C4_Container>\nPerson(u, \"User\")\nSystem_Boundary(s, \"S\") {\n Container(a, \"API\", \"Node.js\")\n}\nRel(u, a, \"uses\")\n@enduml",
    };

    /** Renders TRAIN in PNG, SVG and text art, then exits normally so the JVM writes the archive. */
    private static void train() {
        for (FileFormat f : new FileFormat[] {FileFormat.PNG, FileFormat.SVG, FileFormat.UTXT}) {
            for (String s : TRAIN) renderQuietly(s, f);
        }
        System.exit(0);
    }

    private static void renderQuietly(String source, FileFormat f) {
        try {
            new SourceStringReader(source).outputImage(new ByteArrayOutputStream(), 0, new FileFormatOption(f));
        } catch (Throwable t) {
            System.err.println("devutil worker: warm-up failed: " + t);
        }
    }

    /** write() from a thread of its own: a pipe the server closed ends the worker. */
    private static void send(DataOutputStream out, int id, Reply reply) {
        try {
            write(out, id, reply);
        } catch (IOException e) {
            System.exit(1); // the server closed the pipe
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
        LOGGED_LINKAGE.remove();
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
        // The index counts images across every block and every page (docs/protocols/plantuml-server.md §1).
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
            final String broken = LOGGED_LINKAGE.get();
            if (broken != null) {
                broken(r, broken);
                return;
            }
        }
        if (op.equals("check")) return;

        FileFormatOption option = new FileFormatOption(op.equals("map") ? FileFormat.PNG : formatOf(fmt),
            !op.equals("map"));
        if (dark) option = option.withColorMapper(ColorMapper.DARK_MODE);
        final ByteArrayOutputStream bos = new ByteArrayOutputStream(16 * 1024);
        final ImageData data = diagram.exportDiagram(bos, local, option);
        // The engine draws a crash report for a Throwable it caught while exporting; a LinkageError
        // among its causes is no fault of the diagram's.
        final String broken = data == null ? null : linkage(data.getRootCause());
        if (broken != null) {
            broken(r, broken);
            return;
        }
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
