/* udpflood N [SIZE] [ADDR] [PORT]: send N UDP datagrams of SIZE bytes
 * (default 64) to ADDR:PORT (default 10.0.2.2:9, the test VM's host side)
 * as fast as the stack takes them; print "run_ns <ns>" and "sent <n>".
 * The virtio bench's event generator: one virtqueue_add_outbuf per packet. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0, sent = 0;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 64;
	struct sockaddr_in to = { .sin_family = AF_INET };
	char buf[65536];
	long long t0;
	int fd;

	if (n <= 0 || size > sizeof(buf)) {
		fprintf(stderr, "usage: udpflood N [SIZE] [ADDR] [PORT]\n");
		return 2;
	}
	to.sin_port = htons(argc > 4 ? (unsigned short)atoi(argv[4]) : 9);
	if (inet_pton(AF_INET, argc > 3 ? argv[3] : "10.0.2.2", &to.sin_addr) != 1) {
		fprintf(stderr, "udpflood: bad address\n");
		return 2;
	}
	if ((fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0) {
		perror("socket");
		return 1;
	}
	memset(buf, 'x', size);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (sendto(fd, buf, size, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)size)
			sent++;
	printf("run_ns %lld\nsent %ld\n", now_ns() - t0, sent);
	close(fd);
	return sent == n ? 0 : 1;
}
