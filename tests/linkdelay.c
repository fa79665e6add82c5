/* SPDX-License-Identifier: Apache-2.0 */
/*
 * linkdelay - holds every packet of one NFQUEUE for a fixed time, then
 * accepts it, in arrival order. tests/zkserver runs it inside a server's
 * network namespace (`ip netns exec`) to delay a link between two ZooKeeper
 * servers: this kernel has no netem qdisc.
 *
 *   linkdelay [--while PATH] QUEUE DELAY_MS
 *
 * Binds NFQUEUE number QUEUE (0..65535), prints "ready" on stdout once bound
 * (zkserver adds its iptables rule only then), and from then on accepts each
 * queued packet DELAY_MS milliseconds after it came. Every packet waits the
 * same time, so a FIFO is the schedule and the order is kept.
 *
 * It exits, accepting every packet it still holds at once, on SIGTERM,
 * SIGINT or SIGHUP, and by itself when PATH (zkserver's marker in its DIR)
 * no longer exists, checked every half second: an orphan that nobody stops
 * must not hold a namespace alive forever. On exit it prints on stderr how
 * many packets it delayed.
 */
#include "config.h"

/* <netinet/in.h> before <linux/netfilter.h>, which otherwise pulls in the
 * kernel's <linux/in.h> and clashes with libc's. */
#include <netinet/in.h>

#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* As many as the kernel may queue for us (nfq_set_queue_maxlen), so that
 * the ring never refuses what the kernel handed over. */
#define HELD_MAX 65536

static struct {
  uint32_t id;
  int64_t due_ms;
} held[HELD_MAX];
static unsigned held_head, held_count;
static int64_t delay_ms;
static unsigned long long delayed_total;
static struct nfq_q_handle *queue;
static volatile sig_atomic_t stop_signal;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_stop(int sig) { stop_signal = sig; }

static void accept_packet(uint32_t id) {
  if (nfq_set_verdict(queue, id, NF_ACCEPT, 0, NULL) < 0)
    fprintf(stderr, "linkdelay: verdict for packet %u: %s\n", id,
            strerror(errno));
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg,
                     struct nfq_data *nfa, void *data) {
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  (void)qh;
  (void)msg;
  (void)data;
  if (!ph)
    return 0;
  uint32_t id = ntohl(ph->packet_id);
  if (held_count == HELD_MAX) {
    /* Cannot happen with the queue's own limit; late beats lost. */
    accept_packet(id);
    return 0;
  }
  unsigned slot = (held_head + held_count) % HELD_MAX;
  held[slot].id = id;
  held[slot].due_ms = now_ms() + delay_ms;
  held_count++;
  delayed_total++;
  return 0;
}

static void release_due(int64_t now) {
  while (held_count > 0 && held[held_head].due_ms <= now) {
    accept_packet(held[held_head].id);
    held_head = (held_head + 1) % HELD_MAX;
    held_count--;
  }
}

static int usage(void) {
  fprintf(stderr, "usage: linkdelay [--while PATH] QUEUE DELAY_MS\n");
  return 2;
}

static int parse_uint(const char *s, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v > max)
    return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  const char *while_path = NULL;
  long qnum, ms;
  int argi = 1;
  if (argc >= 3 && strcmp(argv[1], "--while") == 0) {
    while_path = argv[2];
    argi = 3;
  }
  if (argc - argi != 2 || parse_uint(argv[argi], 65535, &qnum) < 0 ||
      parse_uint(argv[argi + 1], 600000, &ms) < 0)
    return usage();
  delay_ms = ms;

  /* Blocked except inside ppoll(), so that a stop cannot slip in between
   * the check of stop_signal and the wait. */
  sigset_t block, waitmask;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  sigprocmask(SIG_BLOCK, &block, &waitmask);
  sigdelset(&waitmask, SIGTERM);
  sigdelset(&waitmask, SIGINT);
  sigdelset(&waitmask, SIGHUP);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  struct nfq_handle *h = nfq_open();
  if (!h) {
    fprintf(stderr, "linkdelay: nfq_open: %s\n", strerror(errno));
    return 1;
  }
  if (nfq_bind_pf(h, AF_INET) < 0) {
    fprintf(stderr, "linkdelay: nfq_bind_pf: %s\n", strerror(errno));
    nfq_close(h);
    return 1;
  }
  queue = nfq_create_queue(h, (uint16_t)qnum, on_packet, NULL);
  if (!queue) {
    fprintf(stderr, "linkdelay: cannot bind queue %ld: %s\n", qnum,
            strerror(errno));
    nfq_close(h);
    return 1;
  }
  /* Only the packet id is needed, never the payload. */
  if (nfq_set_mode(queue, NFQNL_COPY_META, 0) < 0 ||
      nfq_set_queue_maxlen(queue, HELD_MAX) < 0) {
    fprintf(stderr, "linkdelay: configuring queue %ld: %s\n", qnum,
            strerror(errno));
    nfq_destroy_queue(queue);
    nfq_close(h);
    return 1;
  }
  /* A burst that overflows the socket buffer loses packets (the kernel
   * drops what it cannot deliver): make room for a few thousand. */
  nfnl_rcvbufsiz(nfq_nfnlh(h), 8 << 20);
  int fd = nfq_fd(h);
  printf("ready\n");
  fflush(stdout);

  static char buf[65536] __attribute__((aligned));
  int64_t next_check = now_ms() + 500;
  while (!stop_signal) {
    int64_t now = now_ms();
    release_due(now);
    if (while_path && now >= next_check) {
      if (access(while_path, F_OK) != 0) {
        fprintf(stderr, "linkdelay: %s is gone, exiting\n", while_path);
        break;
      }
      next_check = now + 500;
    }
    int64_t wait = next_check - now;
    if (held_count > 0 && held[held_head].due_ms - now < wait)
      wait = held[held_head].due_ms - now;
    if (wait < 0)
      wait = 0;
    struct timespec ts = {.tv_sec = wait / 1000,
                          .tv_nsec = (long)(wait % 1000) * 1000000L};
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = ppoll(&pfd, 1, &ts, &waitmask);
    if (n < 0 && errno != EINTR) {
      fprintf(stderr, "linkdelay: poll: %s\n", strerror(errno));
      break;
    }
    if (n <= 0)
      continue;
    for (;;) {
      ssize_t len = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (len < 0) {
        /* ENOBUFS: the kernel dropped packets it could not hand us; what
         * it did hand us is still to be delayed. */
        if (errno == ENOBUFS || errno == EINTR)
          continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          fprintf(stderr, "linkdelay: recv: %s\n", strerror(errno));
        break;
      }
      nfq_handle_packet(h, buf, (int)len);
    }
  }
  release_due(INT64_MAX);
  fprintf(stderr, "linkdelay: queue %ld: %llu packets delayed by %ld ms\n",
          qnum, delayed_total, ms);
  nfq_destroy_queue(queue);
  nfq_close(h);
  return 0;
}
