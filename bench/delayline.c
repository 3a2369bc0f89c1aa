/* A fixed-delay line for bench/wan.sh, standing in for netem's delay on kernels without netem.
 *
 * iptables sends a namespace's incoming packets to NFQUEUE <queue>; this program takes each one's
 * id as it arrives (metadata only: the packet stays in the kernel), holds it <delay_us>, then
 * accepts it. Every packet gets the same delay, so they leave in the order they came: one FIFO
 * and one batch verdict (`accept every id up to this one`) for all that are due.
 *
 * The line must hold a bandwidth-delay product (1 Gbit/s x 100 ms is about 8,500 full-size
 * packets each way, plus ACKs), so the queue length and the netlink receive buffer are raised far
 * above the defaults; a packet the kernel could not queue shows in
 * /proc/net/netfilter/nfnetlink_queue (queue_dropped, user_dropped), which the bench reports.
 *
 * Usage: delayline QUEUE DELAY_US   (runs until SIGTERM/SIGINT; prints packets passed on exit)
 */
#define _GNU_SOURCE  /* ppoll */
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RING (1u << 20)          /* packets held at once, at most (power of two) */
#define QUEUE_MAXLEN 200000u     /* kernel-side queue length */
#define RCVBUF (256u << 20)      /* netlink receive buffer, bytes */

static uint32_t ids[RING];
static uint64_t due[RING];
static uint32_t head, tail;      /* ring indices: [head, tail) are held */
static uint64_t delay_ns, passed, overflow;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa, void *data) {
  (void)msg; (void)data;
  struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
  if (!ph) return 0;
  uint32_t id = ntohl(ph->packet_id);
  if (tail - head == RING) {  /* cannot hold it: let it through undelayed, and count it */
    overflow++;
    return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
  }
  ids[tail % RING] = id;
  due[tail % RING] = now_ns() + delay_ns;
  tail++;
  return 0;
}

/* Accepts every held packet that is due, with one verdict for the newest of them. */
static void release(struct nfq_q_handle *qh, uint64_t now) {
  uint32_t last = head;
  while (last != tail && due[last % RING] <= now) last++;
  if (last == head) return;
  nfq_set_verdict_batch(qh, ids[(last - 1) % RING], NF_ACCEPT);
  passed += last - head;
  head = last;
}

static void on_signal(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s QUEUE DELAY_US\n", argv[0]);
    return 2;
  }
  uint16_t queue = (uint16_t)atoi(argv[1]);
  delay_ns = (uint64_t)atoll(argv[2]) * 1000u;

  struct nfq_handle *h = nfq_open();
  if (!h) { perror("nfq_open"); return 1; }
  struct nfq_q_handle *qh = nfq_create_queue(h, queue, on_packet, NULL);
  if (!qh) { perror("nfq_create_queue"); return 1; }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) { perror("nfq_set_mode"); return 1; }
  if (nfq_set_queue_maxlen(qh, QUEUE_MAXLEN) < 0) { perror("nfq_set_queue_maxlen"); return 1; }
  nfnl_rcvbufsiz(nfq_nfnlh(h), RCVBUF);  /* SO_RCVBUFFORCE as root */
  int fd = nfq_fd(h);

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  static char buf[1 << 16];
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  uint64_t enobufs = 0;
  printf("ready\n");
  fflush(stdout);
  while (!stop) {
    uint64_t now = now_ns();
    release(qh, now);
    struct timespec wait_ts, *timeout = NULL;
    if (head != tail) {  /* wake when the next one is due (ppoll: a 500 us delay must not become 1 ms) */
      uint64_t wait = due[head % RING] > now ? due[head % RING] - now : 0;
      wait_ts.tv_sec = (time_t)(wait / 1000000000u);
      wait_ts.tv_nsec = (long)(wait % 1000000000u);
      timeout = &wait_ts;
    }
    if (ppoll(&pfd, 1, timeout, NULL) < 0) {
      if (errno == EINTR) continue;
      perror("ppoll");
      break;
    }
    if (!(pfd.revents & POLLIN)) continue;
    /* Drain everything readable before sleeping again. */
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == ENOBUFS) { enobufs++; continue; }  /* the kernel dropped messages: counted there too */
        break;
      }
      nfq_handle_packet(h, buf, (int)n);
    }
  }
  /* Let what is held through before the queue goes away. */
  if (head != tail) nfq_set_verdict_batch(qh, ids[(tail - 1) % RING], NF_ACCEPT);
  fprintf(stderr, "delayline queue %u: %llu packets delayed, %llu passed undelayed (ring full), %llu ENOBUFS\n",
          queue, (unsigned long long)passed, (unsigned long long)overflow, (unsigned long long)enobufs);
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}
