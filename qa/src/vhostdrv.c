/*
 * vhostdrv - a userspace vhost-net driver: sets up the kernel's vhost-net
 * exactly like a VMM does (tap backend, guest memory = a buffer of our own)
 * and then plays the guest's virtio-net driver, kicking the TX queue an
 * exactly known number of times with an exactly known number of packets, so
 * that QA can assert exact counts of vhost handler runs, packets and bytes.
 *
 * Build:  cc -std=c11 -O2 -Wall -Wextra -Werror -o vhostdrv vhostdrv.c
 *
 * Usage:  vhostdrv [-k K] [-p P] [-s S] [-d USEC] [-i NAME] [-n NUM] [-l]
 *                  [-c] [-t] [-b SNDBUF] [-r R] [-T MSEC] [-W SECS]
 *                  [-w SECS] [-q] [-v]
 *   -k K      K kicks of the TX queue (default 1)
 *   -p P      P packets added to the TX avail ring before each kick
 *             (default 1)
 *   -s S      S bytes of frame per packet, after the virtio-net header
 *             (default 64, 14..65000): an Ethernet frame to
 *             02:00:00:00:00:02 from 02:00:00:00:00:01, ethertype 0x88b5
 *             (IEEE local experimental), rest zero-filled
 *   -d USEC   sleep USEC microseconds after each kick's completion
 *   -i NAME   tap device name (default "vhtap%d": the kernel picks a number)
 *   -n NUM    ring size (default 256; raised to fit P packets; power of 2)
 *   -l        legacy virtio-net header: ack no features, so the header is
 *             struct virtio_net_hdr (10 bytes) and the tap's vnet_hdr_sz 10
 *             (default: ack VIRTIO_F_VERSION_1 + VIRTIO_NET_F_MRG_RXBUF,
 *             12-byte struct virtio_net_hdr_mrg_rxbuf, vnet_hdr_sz 12)
 *   -c        one descriptor per packet (header and frame contiguous;
 *             default: a 2-descriptor chain, header then frame)
 *   -t        attach the tap to the TX queue only (no RX backend)
 *   -b SNDBUF TUNSETSNDBUF on the tap (default: untouched = INT_MAX, which
 *             makes vhost-net use its batched XDP TX path; anything smaller
 *             makes it call sendmsg per packet)
 *   -r R      after the TX phase, RX phase: post R receive buffers, kick the
 *             RX queue once, then inject R frames (S bytes each) into the tap
 *             with an AF_PACKET socket, one at a time, waiting for each to
 *             appear in the RX used ring (not with -t)
 *   -T MSEC   completion timeout per kick/frame (default 10000)
 *   -W SECS   after set-up, before the first kick, sleep SECS seconds
 *   -w SECS   after the summary, linger SECS seconds with everything still
 *             open (the vhost device and its worker thread stay alive)
 *   -q        quiet: no summary on stdout (exit status still tells)
 *   -- ARGS   ignored: with exec -a, a VMM's command line for the VM
 *             identity tests (qa 306: Firecracker's --id)
 *   -v        verbose: set-up details on stderr
 *
 * Set-up, in QEMU's order: open /dev/net/tun, TUNSETIFF IFF_TAP|IFF_NO_PI|
 * IFF_VNET_HDR, TUNSETVNETHDRSZ (12 or 10), IPv6 disabled on the tap
 * (/proc/sys/net/ipv6/conf/NAME/disable_ipv6, so the host stack sends no
 * router/neighbour solicitations or MLD reports into it), SIOCSIFFLAGS
 * IFF_UP (no address). Open /dev/vhost-net, VHOST_SET_OWNER,
 * VHOST_GET_FEATURES, VHOST_SET_FEATURES, VHOST_SET_MEM_TABLE (one region:
 * an anonymous mmap, guest_phys_addr == userspace_addr == its address), for
 * queue 0 (rx) and 1 (tx): VHOST_SET_VRING_NUM, _BASE 0, _ADDR, _KICK and
 * _CALL (eventfds), then VHOST_NET_SET_BACKEND (tap fd) for 0 (unless -t)
 * and 1. Split rings, no VIRTIO_RING_F_EVENT_IDX, no indirect descriptors;
 * the driver never sets VRING_AVAIL_F_NO_INTERRUPT and kicks regardless of
 * VRING_USED_F_NO_NOTIFY (it only kicks when the queue is idle anyway).
 *
 * Set-up activity: VHOST_NET_SET_BACKEND starts polling the tap socket; the
 * TX socket poll (EPOLLOUT) fires at once as the tap is writable, so the
 * worker runs handle_tx once (via handle_tx_net, not handle_tx_kick), finds
 * no buffers and stops polling the socket (handle_tx disables it; it is
 * only re-armed after a sendmsg error). The RX socket poll (EPOLLIN) fires
 * only if the tap has queued frames: none, with IPv6 off and no address. To
 * keep this out of the kick phase, set-up ends with VHOST_SET_LOG_FD(-1): a
 * no-op for us, but like every vhost_dev_ioctl() it is followed by
 * vhost_net_flush(), which waits until the worker has run everything queued.
 *
 * TX phase, per kick: P packets, each one descriptor chain (header
 * descriptor + frame descriptor, or one descriptor with -c) at fixed heads
 * (packet j uses descriptors 2j, 2j+1, or j), added to the avail ring; the
 * avail idx published (release); a full fence; 8-byte write of 1 to the TX
 * kick eventfd. Then wait: poll() the TX call eventfd (reading it drains
 * it) until the used idx has advanced by exactly P, every used element
 * checked (id = the head we posted, in order). vhost publishes the used idx
 * as the handler's last act (handle_tx_copy's closing vhost_tx_batch, after
 * it found the avail ring empty and re-enabled notification), and the
 * worker clears VHOST_WORK_QUEUED before calling the handler, so the next
 * kick always queues a new handler run: one kick = one handle_tx_kick =
 * one handle_tx run with exactly P packets, as long as one run may take
 * them all: vhost_exceeds_weight() ends a run (and requeues the handler)
 * at 256 packets (VHOST_NET_PKT_WEIGHT) or 0x80000 bytes (VHOST_NET_WEIGHT),
 * so keep P < 256 and P*(hdr+S) < 524288 (warned about otherwise).
 * Call signals: one per run (P <= 64); the batched path also signals each
 * time 64 (VHOST_NET_BATCH) packets are pending.
 *
 * What vhost counts: handle_tx_copy's len (and so total_len, the third
 * argument of vhost_exceeds_weight) is the length of the packet's whole
 * out-descriptor chain minus vhost_hlen, and vhost_hlen is 0 because we do
 * not ack VHOST_NET_F_VIRTIO_NET_HDR (the tap parses the header: sock_hlen
 * = 12/10). So per packet vhost counts hdr + S bytes, the header included.
 *
 * Summary on stdout, one fact per line:
 *   pid N                    this process (the vhost owner: the worker
 *                            kernel thread is named vhost-N)
 *   tap NAME
 *   features 0xX / acked 0xX the device's offer / what we acked
 *   hdrlen 12|10             virtio-net header bytes per packet
 *   descs_per_packet 2|1
 *   ring NUM
 *   kicks K                  TX kicks written
 *   packets N                TX packets completed (= K*P)
 *   payload_bytes N          frame bytes sent (= K*P*S)
 *   bytes N                  bytes as vhost counts them (= K*P*(hdrlen+S))
 *   bytes_per_kick N         total_len of each handler run (= P*(hdrlen+S))
 *   used N                   final TX used idx (= K*P mod 65536)
 *   calls N                  TX call eventfd signals received (sum of counts)
 *   rx_packets N / rx_bytes N / rx_used N / rx_calls N   (-r only; rx_bytes
 *                            as vhost counts: hdrlen + S per frame)
 *   elapsed_ns N             first kick to last completion
 *   status ok|bad
 *
 * Observed (Debian 6.1.0-56-amd64 under QEMU TCG, 1 vCPU; counted with
 * vhostdrv.bt; experimental_zcopytx=0, busyloop_timeout 0), per process,
 * identical in 3/3 runs of -k 100 -p 8 -s 512 (gcc and clang builds):
 *   handle_tx_kick 100 = K; handle_tx_net 1 (SET_BACKEND, see above);
 *   handle_tx = handle_tx_copy = vhost_tx_batch 101 = K + 1;
 *   handle_tx_zerocopy 0; handle_rx/_kick/_net 0
 *   vhost_exceeds_weight: pkts 1..8 each exactly 100 times; the last call
 *   of every handler run (pkts, total_len) = (8, 4192) x 100, plus the
 *   set-up run that sends nothing and never calls it
 *   vhost_poll_wakeup 100 = K (the SET_BACKEND wakeup is inlined in
 *   vhost_poll_start and not seen); eventfd_signal by the worker 100;
 *   vhost_add_used_and_signal_n 100; vhost_work_queue K + 8 (the set-up
 *   handle_tx_net and 7 vhost_dev_flush() works, set-up and release)
 * P = 100: one run per kick, 2 call signals per kick (64 + 36).
 * P = 300: 2 handle_tx_kick runs per kick (256 + 44, the requeue goes
 * straight to vhost_poll_queue: vhost_poll_wakeup still K), 5 signals.
 * -b 1048576 (per-packet sendmsg), -l -c (10-byte header, one descriptor:
 * total_len 4*110 for -p 4 -s 100) and -t: the same exactness.
 * -r 20: 1 handle_rx_kick run (the buffer-posting kick, no frame), then
 * 20 handle_rx_net runs of 1 packet, total_len hdrlen + S each;
 * vhost_poll_wakeup K + 1 + 20.
 * 100 kicks x 8 packets take 15..60 ms under TCG (elapsed_ns), the whole
 * process 0.2..0.7 s.
 *
 * Exit status: 0 ok; 1 usage; 2 system/vhost error; 3 timeout or
 * unexpected used ring contents; 77 /dev/vhost-net or /dev/net/tun missing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/vhost.h>
#include <linux/virtio_config.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vhostdrv.h"

#define RXQ		0
#define TXQ		1
#define RX_BUF_LEN	2048	/* hdr + up to 2036 bytes of frame */
#define MAX_RING	32768

static unsigned long kicks = 1, pkts = 1, size = 64, delay_us, ring = 256;
static unsigned long sndbuf, rx_frames, timeout_ms = 10000, wait_s, linger;
static int legacy, single, tx_only, quiet, verbose;
static const char *ifname = "vhtap%d";

static _Noreturn void die(int status, const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	fprintf(stderr, "vhostdrv: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (status == 2 || status == 77)
		fprintf(stderr, ": %s", strerror(e));
	fputc('\n', stderr);
	exit(status);
}

static void info(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	fprintf(stderr, "vhostdrv: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static unsigned long num(const char *s, unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
		die(1, "bad number '%s' (%lu..%lu)", s, lo, hi);
	return v;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Since Linux 6.4 the vhost worker is a thread of the owner, forked by
 * VHOST_SET_OWNER (vhost_task_create(), kernel/vhost_task.c): it inherits
 * our scheduling policy. Put it back on SCHED_OTHER so that a vhostdrv run
 * under chrt leaves the worker a normal task, as the kthread it is on 6.1. */
static void worker_to_sched_other(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, "vhost-", 6) == 0 &&
		    sched_setscheduler(atoi(e->d_name), SCHED_OTHER, &(struct sched_param){0}) == 0)
			info("vhost worker thread %s set to SCHED_OTHER", e->d_name);
		fclose(f);
	}
	closedir(d);
}

static void sleep_us(unsigned long us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* one split virtqueue in our "guest memory" */
struct vq {
	unsigned num;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx;	/* next avail idx to publish */
	uint16_t used_seen;	/* used idx consumed so far */
	int kick, call;
	uint64_t calls;
};

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static size_t vring_bytes(unsigned n)
{
	size_t s = align_up(16u * n + 6 + 2u * n, 4096);

	return s + align_up(6 + 8u * n, 4096);
}

static void vring_place(struct vq *q, char *base, unsigned n)
{
	q->num = n;
	q->desc = (struct vring_desc *)base;
	q->avail = (struct vring_avail *)(base + (size_t)16 * n);
	q->used = (struct vring_used *)(base + align_up(16u * n + 6 + 2u * n, 4096));
}

static void xioctl(int fd, unsigned long req, void *arg, const char *what)
{
	if (ioctl(fd, req, arg) < 0)
		die(2, "%s", what);
}

static void publish_and_kick(struct vq *q, int kick)
{
	uint64_t one = 1;

	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (kick && write(q->kick, &one, sizeof(one)) != sizeof(one))
		die(2, "kick write");
}

/*
 * Wait until the used idx reaches `target`; check the new used elements'
 * ids against `heads` (NULL: no check). Returns 0, or 3 on timeout/bad id.
 */
static int wait_used(struct vq *q, uint16_t target, const uint16_t *heads,
		     unsigned nheads, uint32_t *lens)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned i = 0;

	for (;;) {
		uint16_t u = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);
		struct pollfd pfd = { .fd = q->call, .events = POLLIN };
		uint64_t cnt, t;

		while (q->used_seen != u) {
			struct vring_used_elem *e = &q->used->ring[q->used_seen % q->num];

			if ((uint16_t)(q->used_seen - (uint16_t)(target - nheads)) >= nheads) {
				fprintf(stderr, "vhostdrv: used idx %u beyond %u\n", u, target);
				return 3;
			}
			if (heads && e->id != heads[i]) {
				fprintf(stderr, "vhostdrv: used[%u].id %u, expected %u\n",
					q->used_seen, e->id, heads[i]);
				return 3;
			}
			if (lens)
				lens[i] = e->len;
			i++;
			q->used_seen++;
		}
		if (u == target) {
			/* drain the call signal(s) of this run */
			if (read(q->call, &cnt, sizeof(cnt)) == sizeof(cnt))
				q->calls += cnt;
			return 0;
		}
		t = now_ns();
		if (t >= deadline) {
			fprintf(stderr, "vhostdrv: timeout: used idx %u, waiting for %u\n",
				u, target);
			return 3;
		}
		if (poll(&pfd, 1, (int)((deadline - t) / 1000000u) + 1) < 0 && errno != EINTR)
			die(2, "poll");
		if (read(q->call, &cnt, sizeof(cnt)) == sizeof(cnt))
			q->calls += cnt;
	}
}

static void fill_frame(unsigned char *f, size_t len)
{
	static const unsigned char hdr[14] = {
		0x02, 0, 0, 0, 0, 0x02,		/* dst */
		0x02, 0, 0, 0, 0, 0x01,		/* src */
		0x88, 0xb5			/* IEEE local experimental */
	};

	memset(f, 0, len);
	memcpy(f, hdr, sizeof(hdr));
}

static void usage(void)
{
	fprintf(stderr,
		"usage: vhostdrv [-k K] [-p P] [-s S] [-d USEC] [-i NAME] [-n NUM] [-l] [-c]\n"
		"                [-t] [-b SNDBUF] [-r R] [-T MSEC] [-W SECS] [-w SECS] [-q] [-v]\n");
	exit(1);
}

int vhostdrv_main(int argc, char **argv)
{
	int opt, tap, vh, status = 0;
	struct ifreq ifr;
	uint64_t features, acked, t0 = 0, t1 = 0;
	unsigned hdrlen, dpp, i;
	size_t pkt_stride, mem_len, off_rings[2], off_tx, off_rx;
	char *mem;
	struct vq q[2];
	uint16_t *heads;
	unsigned long k, rx_done = 0;

	while ((opt = getopt(argc, argv, "k:p:s:d:i:n:lctb:r:T:W:w:qv")) != -1) {
		switch (opt) {
		case 'k': kicks = num(optarg, 0, ULONG_MAX / 65536); break;
		case 'p': pkts = num(optarg, 1, MAX_RING); break;
		case 's': size = num(optarg, ETH_HLEN, 65000); break;
		case 'd': delay_us = num(optarg, 0, 3600000000UL); break;
		case 'i': ifname = optarg; break;
		case 'n': ring = num(optarg, 1, MAX_RING); break;
		case 'l': legacy = 1; break;
		case 'c': single = 1; break;
		case 't': tx_only = 1; break;
		case 'b': sndbuf = num(optarg, 1, INT_MAX); break;
		case 'r': rx_frames = num(optarg, 0, MAX_RING); break;
		case 'T': timeout_ms = num(optarg, 1, 3600000); break;
		case 'W': wait_s = num(optarg, 0, 86400); break;
		case 'w': linger = num(optarg, 0, 86400); break;
		case 'q': quiet = 1; break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	/* after "--": ignored, a VMM's command line to look like (qa 306) */
	if ((optind != argc && strcmp(argv[optind - 1], "--") != 0) || strlen(ifname) >= IFNAMSIZ)
		usage();
	if (rx_frames && tx_only)
		die(1, "-r needs the RX backend (not with -t)");
	hdrlen = legacy ? sizeof(struct virtio_net_hdr)
			: sizeof(struct virtio_net_hdr_mrg_rxbuf);
	if (rx_frames && size + hdrlen > RX_BUF_LEN)
		die(1, "-r: frames of at most %u bytes", RX_BUF_LEN - hdrlen);
	dpp = single ? 1 : 2;
	if ((ring & (ring - 1)) != 0)
		die(1, "-n: ring size must be a power of 2");
	while (ring < pkts * dpp || ring < rx_frames)
		ring *= 2;
	if (ring > MAX_RING)
		die(1, "-p too large for a %u-entry ring", MAX_RING);
	if (pkts >= 256 || pkts * (hdrlen + size) >= 0x80000)
		fprintf(stderr, "vhostdrv: warning: %lu packets / %lu bytes per kick reach "
			"vhost's weight limits (256 packets, 524288 bytes): a kick will "
			"take more than one handler run\n", pkts, pkts * (hdrlen + size));

	/* guest memory: [rx ring][tx ring][tx packet buffers][rx buffers] */
	pkt_stride = align_up(hdrlen + size, 64);
	off_rings[RXQ] = 0;
	off_rings[TXQ] = vring_bytes((unsigned)ring);
	off_tx = 2 * vring_bytes((unsigned)ring);
	off_rx = align_up(off_tx + pkts * pkt_stride, 4096);
	mem_len = align_up(off_rx + rx_frames * RX_BUF_LEN, 4096);
	mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED)
		die(2, "mmap %zu", mem_len);
	memset(q, 0, sizeof(q));
	for (i = 0; i < 2; i++)
		vring_place(&q[i], mem + off_rings[i], (unsigned)ring);

	/* the TX packets: fixed buffers, fixed descriptor chains */
	heads = calloc((pkts > rx_frames ? pkts : rx_frames) + 1, sizeof(*heads));
	if (!heads)
		die(2, "calloc");
	for (i = 0; i < pkts; i++) {
		char *b = mem + off_tx + (size_t)i * pkt_stride;
		struct vring_desc *d = &q[TXQ].desc[(size_t)i * dpp];

		memset(b, 0, hdrlen);	/* no csum, GSO_NONE, num_buffers 0 */
		fill_frame((unsigned char *)b + hdrlen, size);
		heads[i] = (uint16_t)(i * dpp);
		if (single) {
			d[0].addr = (uintptr_t)b;
			d[0].len = (uint32_t)(hdrlen + size);
			d[0].flags = 0;
		} else {
			d[0].addr = (uintptr_t)b;
			d[0].len = hdrlen;
			d[0].flags = VRING_DESC_F_NEXT;
			d[0].next = (uint16_t)(i * dpp + 1);
			d[1].addr = (uintptr_t)(b + hdrlen);
			d[1].len = (uint32_t)size;
			d[1].flags = 0;
		}
	}

	/* opened first only to fail early (77) without a tap to clean up */
	vh = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	if (vh < 0)
		die(errno == ENOENT ? 77 : 2, "/dev/vhost-net");

	/* the tap */
	tap = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (tap < 0)
		die(errno == ENOENT ? 77 : 2, "/dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	xioctl(tap, TUNSETIFF, &ifr, "TUNSETIFF");
	{
		int hs = (int)hdrlen;
		char path[128];
		int fd;

		xioctl(tap, TUNSETVNETHDRSZ, &hs, "TUNSETVNETHDRSZ");
		if (sndbuf) {
			int sb = (int)sndbuf;

			xioctl(tap, TUNSETSNDBUF, &sb, "TUNSETSNDBUF");
		}
		snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
			 ifr.ifr_name);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, "1\n", 2) != 2)
				info("%s: %s", path, strerror(errno));
			close(fd);
		} else {
			info("%s: %s", path, strerror(errno));
		}
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			die(2, "socket");
		xioctl(fd, SIOCGIFFLAGS, &ifr, "SIOCGIFFLAGS");
		ifr.ifr_flags |= IFF_UP;
		xioctl(fd, SIOCSIFFLAGS, &ifr, "SIOCSIFFLAGS");
		close(fd);
	}
	info("tap %s up, vnet_hdr_sz %u", ifr.ifr_name, hdrlen);

	/* vhost-net */
	xioctl(vh, VHOST_SET_OWNER, NULL, "VHOST_SET_OWNER");
	worker_to_sched_other();
	xioctl(vh, VHOST_GET_FEATURES, &features, "VHOST_GET_FEATURES");
	acked = 0;
	if (!legacy) {
		uint64_t want = (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_NET_F_MRG_RXBUF);

		if ((features & want) != want)
			die(2, "device lacks VERSION_1/MRG_RXBUF (features %#" PRIx64 ")", features);
		acked = want;
	}
	xioctl(vh, VHOST_SET_FEATURES, &acked, "VHOST_SET_FEATURES");
	{
		struct vhost_memory *m = calloc(1, sizeof(*m) + sizeof(m->regions[0]));

		if (!m)
			die(2, "calloc");
		m->nregions = 1;
		m->regions[0].guest_phys_addr = (uintptr_t)mem;
		m->regions[0].memory_size = mem_len;
		m->regions[0].userspace_addr = (uintptr_t)mem;
		xioctl(vh, VHOST_SET_MEM_TABLE, m, "VHOST_SET_MEM_TABLE");
		free(m);
	}
	for (i = 0; i < 2; i++) {
		struct vhost_vring_state st = { .index = i, .num = (unsigned)ring };
		struct vhost_vring_addr a = {
			.index = i,
			.flags = 0,
			.desc_user_addr = (uintptr_t)q[i].desc,
			.used_user_addr = (uintptr_t)q[i].used,
			.avail_user_addr = (uintptr_t)q[i].avail,
			.log_guest_addr = 0,
		};
		struct vhost_vring_file f = { .index = i };

		xioctl(vh, VHOST_SET_VRING_NUM, &st, "VHOST_SET_VRING_NUM");
		st.num = 0;
		xioctl(vh, VHOST_SET_VRING_BASE, &st, "VHOST_SET_VRING_BASE");
		xioctl(vh, VHOST_SET_VRING_ADDR, &a, "VHOST_SET_VRING_ADDR");
		q[i].kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		q[i].call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (q[i].kick < 0 || q[i].call < 0)
			die(2, "eventfd");
		f.fd = q[i].kick;
		xioctl(vh, VHOST_SET_VRING_KICK, &f, "VHOST_SET_VRING_KICK");
		f.fd = q[i].call;
		xioctl(vh, VHOST_SET_VRING_CALL, &f, "VHOST_SET_VRING_CALL");
	}
	for (i = tx_only ? TXQ : RXQ; i < 2; i++) {
		struct vhost_vring_file f = { .index = i, .fd = tap };

		xioctl(vh, VHOST_NET_SET_BACKEND, &f, "VHOST_NET_SET_BACKEND");
	}
	{
		/* sync point: vhost_net_flush() after this vhost_dev_ioctl */
		int unbind = VHOST_FILE_UNBIND;

		xioctl(vh, VHOST_SET_LOG_FD, &unbind, "VHOST_SET_LOG_FD");
	}
	info("vhost-net ready: features %#" PRIx64 " acked %#" PRIx64 ", ring %lu, "
	     "worker vhost-%ld", features, acked, ring, (long)getpid());
	if (wait_s)
		sleep_us(wait_s * 1000000UL);

	/* TX phase */
	t0 = now_ns();
	for (k = 0; k < kicks && !status; k++) {
		uint16_t target;

		for (i = 0; i < pkts; i++) {
			q[TXQ].avail->ring[q[TXQ].avail_idx % q[TXQ].num] = heads[i];
			q[TXQ].avail_idx++;
		}
		target = q[TXQ].avail_idx;
		publish_and_kick(&q[TXQ], 1);
		status = wait_used(&q[TXQ], target, heads, (unsigned)pkts, NULL);
		if (delay_us && k + 1 < kicks)
			sleep_us(delay_us);
	}
	t1 = now_ns();
	if (status)
		k--;

	/* RX phase */
	if (rx_frames && !status) {
		struct vq *r = &q[RXQ];
		struct sockaddr_ll sll;
		unsigned char *frame = calloc(1, size);
		uint32_t len = 0;
		int ps;

		if (!frame)
			die(2, "calloc");
		for (i = 0; i < rx_frames; i++) {
			r->desc[i].addr = (uintptr_t)(mem + off_rx + (size_t)i * RX_BUF_LEN);
			r->desc[i].len = RX_BUF_LEN;
			r->desc[i].flags = VRING_DESC_F_WRITE;
			r->avail->ring[r->avail_idx % r->num] = (uint16_t)i;
			r->avail_idx++;
			heads[i] = (uint16_t)i;
		}
		publish_and_kick(r, 1);
		{
			/* let that RX handler run finish before the first frame */
			int unbind = VHOST_FILE_UNBIND;

			xioctl(vh, VHOST_SET_LOG_FD, &unbind, "VHOST_SET_LOG_FD");
		}
		ps = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
		if (ps < 0)
			die(2, "socket(AF_PACKET)");
		memset(&sll, 0, sizeof(sll));
		sll.sll_family = AF_PACKET;
		sll.sll_ifindex = (int)if_nametoindex(ifr.ifr_name);
		sll.sll_halen = ETH_ALEN;
		if (!sll.sll_ifindex)
			die(2, "if_nametoindex %s", ifr.ifr_name);
		fill_frame(frame, size);
		/* the other direction: to the "guest" from the host */
		frame[5] = 0x01;
		frame[11] = 0x02;
		for (rx_done = 0; rx_done < rx_frames && !status; rx_done++) {
			if (sendto(ps, frame, size, 0, (struct sockaddr *)&sll,
				   sizeof(sll)) != (ssize_t)size)
				die(2, "sendto %s", ifr.ifr_name);
			status = wait_used(r, (uint16_t)(r->used_seen + 1),
					   &heads[rx_done], 1, &len);
			if (!status && len != hdrlen + size) {
				fprintf(stderr, "vhostdrv: rx used len %u, expected %lu\n",
					len, hdrlen + size);
				status = 3;
			}
		}
		if (status)
			rx_done--;
		close(ps);
		free(frame);
	}

	if (!quiet) {
		printf("pid %ld\n", (long)getpid());
		printf("tap %s\n", ifr.ifr_name);
		printf("features %#" PRIx64 "\n", features);
		printf("acked %#" PRIx64 "\n", acked);
		printf("hdrlen %u\n", hdrlen);
		printf("descs_per_packet %u\n", dpp);
		printf("ring %lu\n", ring);
		printf("kicks %lu\n", k);
		printf("packets %lu\n", k * pkts);
		printf("payload_bytes %lu\n", k * pkts * size);
		printf("bytes %lu\n", k * pkts * (hdrlen + size));
		printf("bytes_per_kick %lu\n", pkts * (hdrlen + size));
		printf("used %u\n", __atomic_load_n(&q[TXQ].used->idx, __ATOMIC_ACQUIRE));
		printf("calls %" PRIu64 "\n", q[TXQ].calls);
		if (rx_frames) {
			printf("rx_packets %lu\n", rx_done);
			printf("rx_bytes %lu\n", rx_done * (hdrlen + size));
			printf("rx_used %u\n",
			       __atomic_load_n(&q[RXQ].used->idx, __ATOMIC_ACQUIRE));
			printf("rx_calls %" PRIu64 "\n", q[RXQ].calls);
		}
		printf("elapsed_ns %" PRIu64 "\n", t1 - t0);
		printf("status %s\n", status ? "bad" : "ok");
		fflush(stdout);
	}
	if (linger)
		sleep_us(linger * 1000000UL);
	close(vh);
	close(tap);
	free(heads);
	return status;
}

#ifndef VHOSTDRV_NO_MAIN
int main(int argc, char **argv)
{
	return vhostdrv_main(argc, argv);
}
#endif
