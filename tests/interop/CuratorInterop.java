// SPDX-License-Identifier: Apache-2.0
// CuratorInterop - Apache Curator's recipes as the other side of
// tests/test_interop.c: contenders on the same path as libzklock's, each
// logging its own critical sections with System.nanoTime() (CLOCK_MONOTONIC
// on Linux, the clock the C test reads), for the test to check the recipe's
// rule across both.
//
// usage: java CuratorInterop HOSTS MODE PATH [ARGS...]
//   mutex     PATH CLIENTS HOLD_US                   InterProcessMutex
//   rwlock    PATH CLIENTS READ_US WRITE_US EVERY    InterProcessReadWriteLock:
//                                                    every EVERY-th section writes
//   semaphore PATH CLIENTS LIMIT HOLD_US             InterProcessSemaphoreV2
//   latch     PATH CLIENTS HOLD_US                   LeaderLatch, one per term
//   revoke    PATH                                   InterProcessMutex made
//                                                    revocable, driven by stdin
//
// Protocol, one line each way:
//   out  HELLO <ns>                 connected; waits for GO
//   in   GO                         start
//   out  S <who> <M|R|W|L> <start_ns> <end_ns>        one critical section
//   out  T <id> <start_ns> <end_ns> <czxid> <leader>  one leadership term, with
//                                   the leader getLeader() named during it
//   out  O <t0_ns> <t1_ns> <id|->   getLeader() while waiting to lead
//   in   STOP                       finish the current section (round) and end
//   out  DONE <sections>            then exit 0
//   out  ERROR <text>               then exit 1
// revoke mode, per round:
//   in   HELD <node>                the C holder's node: revoke it, then acquire
//   out  ASKED <ns>                 just before Revoker.attemptRevoke
//   out  JHELD <node> <start_ns>    we hold (after the C holder let go)
//   out  REVOKED <ns>               our revocation listener ran (zkl_name_revoke)
//   out  S J0 M <start_ns> <end_ns> our section, ended by that request
// EOF on stdin ends the process at once (exit 3 before DONE: the test is gone).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;

public class CuratorInterop {
    static final long WAIT_S = 20;     // any single wait of a contender
    static volatile boolean stop;
    static volatile boolean finished; // DONE is out: EOF now is the normal end
    static final CountDownLatch go = new CountDownLatch(1);
    static final BlockingQueue<String> commands = new LinkedBlockingQueue<>();
    static final AtomicInteger sections = new AtomicInteger();

    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void fail(String what) {
        out("ERROR " + what.replace('\n', ' '));
        System.out.flush();
        Runtime.getRuntime().halt(1);
    }

    static void hold(long us) {
        long until = System.nanoTime() + us * 1000;
        long left;
        while ((left = until - System.nanoTime()) > 0)
            LockSupport.parkNanos(left);
    }

    static void section(String who, String kind, long start, long end) {
        sections.incrementAndGet();
        out("S " + who + " " + kind + " " + start + " " + end);
    }

    static CuratorFramework client(String hosts) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(hosts, 10000, 10000,
                new RetryNTimes(3, 100));
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS))
            fail("could not connect to " + hosts);
        return c;
    }

    interface Body {
        void run(int index) throws Exception;
    }

    // Runs one body per contender until STOP; any exception ends everything.
    static void contenders(int n, Body body) throws Exception {
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int index = i;
            Thread t = new Thread(() -> {
                try {
                    body.run(index);
                } catch (Throwable e) {
                    fail("contender " + index + ": " + e);
                }
            });
            ts.add(t);
        }
        for (Thread t : ts)
            t.start();
        for (Thread t : ts)
            t.join();
    }

    public static void main(String[] a) throws Exception {
        String hosts = a[0], mode = a[1], path = a[2];
        int n = mode.equals("revoke") ? 1 : Integer.parseInt(a[3]);
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < n; i++)
            cs.add(client(hosts));

        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.equals("GO"))
                        go.countDown();
                    else if (line.equals("STOP")) {
                        stop = true;
                        commands.add(line); // wakes the revoke loop
                    } else
                        commands.add(line);
                }
            } catch (Exception e) {
                // as EOF
            }
            Runtime.getRuntime().halt(finished ? 0 : 3); // else the test is gone
        });
        reader.setDaemon(true);
        reader.start();

        out("HELLO " + System.nanoTime());
        if (!go.await(60, TimeUnit.SECONDS))
            fail("no GO");

        switch (mode) {
        case "mutex": {
            long holdUs = Long.parseLong(a[4]);
            contenders(n, i -> {
                InterProcessMutex m = new InterProcessMutex(cs.get(i), path);
                while (!stop) {
                    if (!m.acquire(WAIT_S, TimeUnit.SECONDS))
                        fail("J" + i + ": mutex not acquired in " + WAIT_S + " s");
                    long s = System.nanoTime();
                    hold(holdUs);
                    long e = System.nanoTime();
                    m.release();
                    section("J" + i, "M", s, e);
                }
            });
            break;
        }
        case "rwlock": {
            long readUs = Long.parseLong(a[4]), writeUs = Long.parseLong(a[5]);
            int every = Integer.parseInt(a[6]);
            contenders(n, i -> {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(cs.get(i), path);
                for (int k = 0; !stop; k++) {
                    boolean write = (k + i) % every == 0;
                    InterProcessMutex m = write ? rw.writeLock() : rw.readLock();
                    if (!m.acquire(WAIT_S, TimeUnit.SECONDS))
                        fail("J" + i + ": " + (write ? "write" : "read") + " lock not acquired");
                    long s = System.nanoTime();
                    hold(write ? writeUs : readUs);
                    long e = System.nanoTime();
                    m.release();
                    section("J" + i, write ? "W" : "R", s, e);
                }
            });
            break;
        }
        case "semaphore": {
            int limit = Integer.parseInt(a[4]);
            long holdUs = Long.parseLong(a[5]);
            contenders(n, i -> {
                InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(cs.get(i), path, limit);
                while (!stop) {
                    Lease lease = sem.acquire(WAIT_S, TimeUnit.SECONDS);
                    if (lease == null)
                        fail("J" + i + ": no lease in " + WAIT_S + " s");
                    long s = System.nanoTime();
                    hold(holdUs);
                    long e = System.nanoTime();
                    sem.returnLease(lease);
                    section("J" + i, "L", s, e);
                }
            });
            break;
        }
        case "latch": {
            long holdUs = Long.parseLong(a[4]);
            contenders(n, i -> {
                CuratorFramework c = cs.get(i);
                for (int t = 0; !stop; t++) {
                    String id = "J" + i + "-" + t;
                    LeaderLatch latch = new LeaderLatch(c, path, id);
                    latch.start();
                    long o0 = System.nanoTime();
                    Participant p = latch.getLeader();
                    long o1 = System.nanoTime();
                    out("O " + o0 + " " + o1 + " "
                            + (p != null && p.isLeader() ? p.getId() : "-"));
                    if (!latch.await(WAIT_S, TimeUnit.SECONDS))
                        fail(id + ": not leader in " + WAIT_S + " s");
                    long s = System.nanoTime();
                    String seen = latch.getLeader().getId();
                    long czxid = c.checkExists().forPath(latch.getOurPath()).getCzxid();
                    hold(holdUs);
                    long e = System.nanoTime();
                    latch.close();
                    sections.incrementAndGet();
                    out("T " + id + " " + s + " " + e + " " + czxid + " " + seen);
                }
            });
            break;
        }
        case "revoke": {
            CuratorFramework c = cs.get(0);
            InterProcessMutex m = new InterProcessMutex(c, path);
            BlockingQueue<Long> revoked = new LinkedBlockingQueue<>();
            for (;;) {
                String cmd = commands.poll(WAIT_S, TimeUnit.SECONDS);
                if (cmd == null)
                    fail("no command in " + WAIT_S + " s");
                if (cmd.equals("STOP"))
                    break;
                if (!cmd.startsWith("HELD "))
                    fail("unexpected command " + cmd);
                String node = cmd.substring(5);
                // Curator must see the C holder first in the queue.
                Collection<String> ps = m.getParticipantNodes();
                String first = ps.isEmpty() ? "(none)" : ps.iterator().next();
                if (!first.endsWith("/" + node))
                    fail("Curator sees " + first + " first, not " + node);
                out("ASKED " + System.nanoTime());
                Revoker.attemptRevoke(c, path + "/" + node);
                // Revocable for one hold only: Curator's release forgets it.
                m.makeRevocable(forLock -> revoked.add(System.nanoTime()));
                if (!m.acquire(WAIT_S, TimeUnit.SECONDS))
                    fail("mutex not acquired in " + WAIT_S + " s after revoking " + node);
                long s = System.nanoTime();
                revoked.clear();
                Collection<String> mine = m.getParticipantNodes();
                String own = mine.iterator().next();
                out("JHELD " + own.substring(own.lastIndexOf('/') + 1) + " " + s);
                Long when = revoked.poll(WAIT_S, TimeUnit.SECONDS);
                if (when == null)
                    fail("no revocation request in " + WAIT_S + " s");
                long e = System.nanoTime();
                m.release();
                out("REVOKED " + when);
                section("J0", "M", s, e);
            }
            break;
        }
        default:
            fail("unknown mode " + mode);
        }
        for (CuratorFramework c : cs)
            c.close();
        finished = true;
        out("DONE " + sections.get());
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }
}
