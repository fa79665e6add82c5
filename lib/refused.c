/* SPDX-License-Identifier: Apache-2.0 */
/*
 * refused.c - whether every server of a connect string refuses a TCP
 * connection right now: then zkl_session_open() has nobody to wait for.
 *
 * The ZooKeeper client does not say why a connection failed: a refused
 * port and a silent one look alike to it, and it goes round its host list
 * until the connect timeout. A refusal, though, is an answer (RST at once,
 * ECONNREFUSED), so the open asks each address itself, with a TCP connect
 * of its own that it closes at once. A refusal costs the server nothing; a
 * server that accepts sees one connection closed without a word. Anything
 * but a refusal (an accept, silence, an unreachable network, a host that
 * does not resolve) means "wait": only a connect string whose every
 * address refuses gives up early.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

#define PROBE_SOCKETS 64 /* addresses tried at once; more: not all refuse */

/* Splits one "host:port" or "[v6]:port" of the connect string (len bytes
 * at s) into host and port; false when it has no port. */
static bool split_host(const char *s, size_t len, char *host, size_t hlen,
                       char *port, size_t plen) {
  const char *colon;
  size_t n;
  if (len > 0 && s[0] == '[') {
    const char *end = memchr(s, ']', len);
    if (!end || (size_t)(end - s) + 2 > len || end[1] != ':')
      return false;
    n = (size_t)(end - s - 1);
    colon = end + 1;
    if (n + 1 > hlen)
      return false;
    memcpy(host, s + 1, n);
  } else {
    for (colon = s + len; colon > s && colon[-1] != ':'; colon--)
      ;
    if (colon == s)
      return false;
    colon--;
    n = (size_t)(colon - s);
    if (n + 1 > hlen)
      return false;
    memcpy(host, s, n);
  }
  host[n] = '\0';
  n = len - (size_t)(colon + 1 - s);
  if (n == 0 || n + 1 > plen)
    return false;
  memcpy(port, colon + 1, n);
  port[n] = '\0';
  return true;
}

/* Starts a connect to every address of one host into pfd (at *n);
 * false when one of them already did not refuse. */
static bool start_host(const char *host, const char *port, struct pollfd *pfd,
                       int *n) {
  struct addrinfo hints, *res = NULL, *ai;
  bool all_refuse = true;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  if (getaddrinfo(host, port, &hints, &res) != 0)
    return false; /* the client may resolve it later: wait */
  for (ai = res; ai && all_refuse; ai = ai->ai_next) {
    int fd;
    if (*n == PROBE_SOCKETS) {
      all_refuse = false;
      break;
    }
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                ai->ai_protocol);
    if (fd < 0) {
      all_refuse = false;
      break;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      all_refuse = false;
      close(fd);
    } else if (errno == EINPROGRESS) {
      pfd[*n].fd = fd;
      pfd[*n].events = POLLOUT;
      (*n)++;
    } else {
      all_refuse = errno == ECONNREFUSED;
      close(fd);
    }
  }
  freeaddrinfo(res);
  return all_refuse;
}

bool zkl__every_server_refuses(const char *hosts, int wait_ms) {
  struct pollfd pfd[PROBE_SOCKETS];
  char host[ZKL_SERVERS_MAX], port[16];
  const char *p = hosts, *end = hosts + strcspn(hosts, "/"); /* no chroot */
  bool all_refuse = true, any = false;
  int n = 0, i;
  int64_t deadline;
  while (all_refuse && p < end) {
    size_t len = strcspn(p, ",");
    if (p + len > end)
      len = (size_t)(end - p);
    if (len > 0) {
      any = true;
      all_refuse = split_host(p, len, host, sizeof host, port, sizeof port) &&
                   start_host(host, port, pfd, &n);
    }
    p += len + 1;
  }
  /* Refusals on loopback come back at the connect; elsewhere within a
   * round trip. Whatever has not answered by wait_ms is not a refusal. */
  deadline = zkl__now_ms() + wait_ms;
  for (i = 0; all_refuse && i < n; i++) {
    int err = 0, left;
    socklen_t elen = sizeof err;
    while ((left = (int)(deadline - zkl__now_ms())) > 0 &&
           poll(&pfd[i], 1, left) < 0 && errno == EINTR)
      ;
    if (left <= 0 || !pfd[i].revents ||
        getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 ||
        err != ECONNREFUSED)
      all_refuse = false;
  }
  for (i = 0; i < n; i++)
    close(pfd[i].fd);
  return any && all_refuse;
}
