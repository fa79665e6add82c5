# SPDX-License-Identifier: Apache-2.0
"""kazoo_interop - kazoo's lock recipes as the other side of tests/test_interop.c.

Contenders on the same path as libzklock's, each logging its own critical
sections with time.monotonic_ns() (CLOCK_MONOTONIC, the clock the C test
reads), for the test to check the recipe's rule across both.

usage: python3 kazoo_interop.py HOSTS MODE PATH [ARGS...]
  lock  PATH CLIENTS HOLD_US PATTERNS   Lock, continuously
  write PATH CLIENTS HOLD_US PATTERNS   WriteLock, continuously
  read  PATH CLIENTS HOLD_US PATTERNS   ReadLock, continuously
  probe PATH KIND PATTERNS              one Lock/ReadLock/WriteLock (KIND
                                        lock, read, write) driven by stdin
PATTERNS: extra_lock_patterns, comma-separated, or "-" for none.

Protocol, one line each way:
  out  HELLO <ns> <kazoo version>     connected, parent made; waits for GO
  in   GO                             start
  out  S <who> <M|R|W> <start_ns> <end_ns>    one critical section
  in   STOP                           finish the current section and end
  out  DONE <sections>                then exit 0
  out  ERROR <text>                   then exit 1
probe mode:
  in   ACQ <timeout_s>                acquire in the background: then
  out  GOT <ns> | TIMEOUT <ns>        granted, or gave up (node deleted)
  in   REL                            release:
  out  RELEASED <ns>                  stamped just before the release
EOF on stdin ends the process at once (exit 3 before DONE: the test is gone).
"""
import os
import sys
import threading
import time

import kazoo
from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

WAIT_S = 20
out_mu = threading.Lock()
stop = threading.Event()
go = threading.Event()
finished = threading.Event()  # DONE is out: EOF now is the normal end
commands = []
commands_cv = threading.Condition()
count = [0]


def out(line):
    with out_mu:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def fail(what):
    out("ERROR " + str(what).replace("\n", " "))
    os._exit(1)


def hold(us):
    until = time.monotonic_ns() + us * 1000
    while True:
        left = until - time.monotonic_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


def read_stdin():
    for line in sys.stdin:
        line = line.strip()
        if line == "GO":
            go.set()
        elif line == "STOP":
            stop.set()
        else:
            with commands_cv:
                commands.append(line)
                commands_cv.notify()
    os._exit(0 if finished.is_set() else 3)  # else the test is gone


def make(zk, kind, path, patterns):
    cls = {"lock": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}[kind]
    return cls(path, extra_lock_patterns=patterns)


def contender(zk, index, kind, path, hold_us, patterns):
    letter = {"lock": "M", "read": "R", "write": "W"}[kind]
    lk = make(zk, kind, path, patterns)
    try:
        while not stop.is_set():
            try:
                lk.acquire(timeout=WAIT_S)
            except LockTimeout:
                fail("K%d: %s not acquired in %d s" % (index, kind, WAIT_S))
            s = time.monotonic_ns()
            hold(hold_us)
            e = time.monotonic_ns()
            lk.release()
            with out_mu:
                count[0] += 1
            out("S K%d %s %d %d" % (index, letter, s, e))
    except Exception as e:  # pylint: disable=broad-except
        fail("K%d: %r" % (index, e))


def next_command():
    with commands_cv:
        if not commands_cv.wait_for(lambda: commands, timeout=60):
            fail("no command in 60 s")
        return commands.pop(0)


def probe(zk, kind, path, patterns):
    lk = make(zk, kind, path, patterns)

    def acquire(timeout):
        try:
            lk.acquire(timeout=timeout)
            out("GOT %d" % time.monotonic_ns())
        except LockTimeout:
            out("TIMEOUT %d" % time.monotonic_ns())
        except Exception as e:  # pylint: disable=broad-except
            fail(repr(e))

    while True:
        cmd = next_command().split()
        if cmd[0] == "ACQ":
            threading.Thread(target=acquire, args=(float(cmd[1]),),
                             daemon=True).start()
        elif cmd[0] == "REL":
            t = time.monotonic_ns()
            lk.release()
            out("RELEASED %d" % t)
        elif cmd[0] == "END":
            return
        else:
            fail("unexpected command %r" % cmd)


def main():
    hosts, mode, path = sys.argv[1], sys.argv[2], sys.argv[3]
    probing = mode == "probe"
    n = 1 if probing else int(sys.argv[4])
    patterns = sys.argv[-1]
    patterns = [] if patterns == "-" else patterns.split(",")
    clients = []
    for _ in range(n):
        zk = KazooClient(hosts=hosts, timeout=10)
        zk.start(timeout=15)
        clients.append(zk)
    # kazoo makes the parent once (a plain node) and never again
    clients[0].ensure_path(path)
    threading.Thread(target=read_stdin, daemon=True).start()
    out("HELLO %d %s" % (time.monotonic_ns(), kazoo.version.__version__))
    if not go.wait(60):
        fail("no GO")
    if probing:
        probe(clients[0], sys.argv[4], path, patterns)
    else:
        hold_us = int(sys.argv[5])
        ts = [threading.Thread(target=contender,
                               args=(clients[i], i, mode, path, hold_us,
                                     patterns))
              for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    for zk in clients:
        zk.stop()
        zk.close()
    finished.set()
    out("DONE %d" % count[0])
    sys.stdout.flush()
    os._exit(0)


main()
