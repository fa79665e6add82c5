// SPDX-License-Identifier: Apache-2.0
// CuratorPeer - Apache Curator's InterProcessMutex and InterProcessMultiLock,
// measured for zklock-bench.
//
// usage: java CuratorPeer HOSTS MODE N WARM SECONDS
//   MODE uncontended: one client cycles acquire+release on a lock of its own
//   MODE contended:   N clients (one CuratorFramework, so one ZooKeeper
//                     session, and one thread each) on one lock
//   MODE multi:       one client cycles acquire+release on an
//                     InterProcessMultiLock of N names (an InterProcessMutex
//                     each, taken one after another, released in reverse)
// It speaks zklock-bench's peer protocol (bench/peer.c): cycles for WARM
// seconds, prints "ready", waits for "go" on stdin, counts the cycles of the
// next SECONDS, prints one "result ..." line, and stops and exits when its
// stdin closes (at any moment: it never outlives the bench).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorPeer {
    static final int SESSION_MS = 10000;
    static final long ACQUIRE_BOUND_S = 30;

    // What every worker shares with the main thread.
    static volatile boolean measuring, stopping;
    static final AtomicLong ops = new AtomicLong();
    static final AtomicLong errors = new AtomicLong();
    static final AtomicLong overlaps = new AtomicLong();
    static final AtomicInteger inside = new AtomicInteger();

    // Acquire latencies of one worker, in nanoseconds, taken while measuring.
    static final class Samples {
        long[] ns = new long[4096];
        int n;

        synchronized void add(long v) {
            if (n == ns.length) ns = Arrays.copyOf(ns, n * 2);
            ns[n++] = v;
        }

        synchronized long[] copy() {
            return Arrays.copyOf(ns, n);
        }
    }

    static double quantileMs(long[] xs, double p) {
        if (xs.length == 0) return Double.NaN;
        Arrays.sort(xs);
        return xs[Math.min(xs.length - 1, (int) (p * xs.length))] / 1e6;
    }

    public static void main(String[] a) throws Exception {
        String hosts = a[0], mode = a[1];
        if (!mode.equals("uncontended") && !mode.equals("contended") && !mode.equals("multi")) {
            System.err.println("CuratorPeer: unknown mode " + mode);
            System.exit(2);
        }
        // n: clients; names: the lock's names (a multi-lock when > 1 or in mode multi)
        int n = mode.equals("contended") ? Integer.parseInt(a[2]) : 1;
        int names = mode.equals("multi") ? Integer.parseInt(a[2]) : 1;
        double warm = Double.parseDouble(a[3]), secs = Double.parseDouble(a[4]);
        String base = "/bench/curator-" + UUID.randomUUID().toString().substring(0, 8);

        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, SESSION_MS, 15000,
                    new RetryNTimes(3, 100));
            c.start();
            if (!c.blockUntilConnected(60, TimeUnit.SECONDS))
                throw new IllegalStateException("client " + i + " could not connect");
            clients.add(c);
        }

        // stdin: "go" opens the window; EOF ends everything.
        CountDownLatch go = new CountDownLatch(1), eof = new CountDownLatch(1);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null)
                    if (line.trim().equals("go")) go.countDown();
            } catch (Exception e) {
                // treated as EOF
            }
            eof.countDown();
            if (go.getCount() > 0) Runtime.getRuntime().halt(1); // the bench went away
        });
        reader.setDaemon(true);
        reader.start();

        List<Thread> workers = new ArrayList<>();
        List<Samples> samples = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Samples mine = new Samples();
            samples.add(mine);
            InterProcessLock m;
            if (mode.equals("multi")) {
                List<String> paths = new ArrayList<>();
                for (int i = 0; i < names; i++) paths.add(base + "/" + i);
                m = new InterProcessMultiLock(c, paths);
            } else {
                m = new InterProcessMutex(c, base);
            }
            Thread t = new Thread(() -> {
                while (!stopping) {
                    try {
                        long t0 = System.nanoTime();
                        if (!m.acquire(ACQUIRE_BOUND_S, TimeUnit.SECONDS)) {
                            errors.incrementAndGet();
                            continue;
                        }
                        if (measuring) mine.add(System.nanoTime() - t0);
                        if (inside.incrementAndGet() != 1) overlaps.incrementAndGet();
                        ops.incrementAndGet();
                        inside.decrementAndGet();
                        m.release();
                    } catch (Exception e) {
                        errors.incrementAndGet();
                    }
                }
            });
            workers.add(t);
            t.start();
        }

        Thread.sleep((long) (warm * 1000));
        System.out.println("ready");
        System.out.flush();
        go.await();
        long o0 = ops.get(), t0 = System.nanoTime();
        measuring = true;
        Thread.sleep((long) (secs * 1000));
        measuring = false;
        long o1 = ops.get(), t1 = System.nanoTime();

        List<long[]> parts = new ArrayList<>();
        int total = 0;
        for (Samples s : samples) {
            long[] p = s.copy();
            parts.add(p);
            total += p.length;
        }
        long[] all = new long[total];
        int k = 0;
        for (long[] p : parts) {
            System.arraycopy(p, 0, all, k, p.length);
            k += p.length;
        }
        System.out.printf(Locale.ROOT, "result ops=%d seconds=%.6f p50_ms=%.3f p99_ms=%.3f overlaps=%d errors=%d%n",
                o1 - o0, (t1 - t0) / 1e9, quantileMs(all, 0.50), quantileMs(all, 0.99),
                overlaps.get(), errors.get());
        System.out.flush();

        eof.await();
        stopping = true;
        for (Thread t : workers) t.join(60000);
        for (CuratorFramework c : clients) c.close();
        System.exit(0);
    }
}
