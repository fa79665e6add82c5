#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kazoo_peer - kazoo's Lock recipe, measured for zklock-bench.

usage: kazoo_peer.py HOSTS MODE N WARM SECONDS
  MODE uncontended: one client cycles acquire+release on a lock of its own
  MODE contended:   N clients (one KazooClient, so one ZooKeeper session,
                    and one thread each) on one lock
It speaks zklock-bench's peer protocol (bench/peer.c): cycles for WARM
seconds, prints "ready", waits for "go" on stdin, counts the cycles of the
next SECONDS, prints one "result ..." line, and stops and exits when its
stdin closes (at any moment: it never outlives the bench).
"""
import os
import sys
import threading
import time
import uuid

from kazoo.client import KazooClient

SESSION_S = 10.0
ACQUIRE_BOUND_S = 30.0


class Shared:
    """What every worker shares with the main thread."""

    def __init__(self):
        self.mu = threading.Lock()
        self.measuring = False
        self.stopping = False
        self.ops = 0
        self.errors = 0
        self.overlaps = 0
        self.inside = 0
        self.samples = []  # acquire latencies (s) taken while measuring


def worker(zk, path, sh):
    lock = zk.Lock(path)
    while not sh.stopping:
        t0 = time.perf_counter()
        try:
            if not lock.acquire(timeout=ACQUIRE_BOUND_S):
                with sh.mu:
                    sh.errors += 1
                continue
        except Exception:  # a lost connection, a closing client
            with sh.mu:
                sh.errors += 1
            continue
        dt = time.perf_counter() - t0
        with sh.mu:
            if sh.measuring:
                sh.samples.append(dt)
            sh.inside += 1
            if sh.inside != 1:
                sh.overlaps += 1
            sh.ops += 1
            sh.inside -= 1
        try:
            lock.release()
        except Exception:
            with sh.mu:
                sh.errors += 1


def quantile_ms(xs, p):
    if not xs:
        return float('nan')
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000


def main():
    hosts, mode = sys.argv[1], sys.argv[2]
    if mode not in ('uncontended', 'contended'):
        # e.g. multi: kazoo has no multi-lock recipe; never measure the
        # wrong thing under the mode's name
        sys.exit('kazoo_peer: unknown mode ' + mode)
    n = int(sys.argv[3]) if mode == 'contended' else 1
    warm, secs = float(sys.argv[4]), float(sys.argv[5])
    path = '/bench/kazoo-' + uuid.uuid4().hex[:8]
    clients = []
    for _ in range(n):
        zk = KazooClient(hosts=hosts, timeout=SESSION_S)
        zk.start(timeout=60)
        clients.append(zk)
    sh = Shared()
    threads = [threading.Thread(target=worker, args=(zk, path, sh), daemon=True)
               for zk in clients]
    for t in threads:
        t.start()

    time.sleep(warm)
    print('ready', flush=True)
    line = sys.stdin.readline()
    if line.strip() != 'go':
        os._exit(1)  # the bench went away
    with sh.mu:
        o0, t0 = sh.ops, time.perf_counter()
        sh.measuring = True
    time.sleep(secs)
    with sh.mu:
        sh.measuring = False
        o1, t1 = sh.ops, time.perf_counter()
        samples = list(sh.samples)
        overlaps, errors = sh.overlaps, sh.errors
    print(f'result ops={o1 - o0} seconds={t1 - t0:.6f} '
          f'p50_ms={quantile_ms(samples, 0.50):.3f} '
          f'p99_ms={quantile_ms(samples, 0.99):.3f} '
          f'overlaps={overlaps} errors={errors}', flush=True)

    sys.stdin.read()  # until the bench closes our stdin
    sh.stopping = True
    for t in threads:
        t.join(60)
    for zk in clients:
        zk.stop()
        zk.close()


main()
