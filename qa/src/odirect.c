/*
 * odirect: exactly N O_DIRECT requests of S bytes to a block device, for
 * exact virtio-blk numbers.
 *
 *   odirect -w|-r [-n N] [-s S] [-t T] [-o OFFSET] DEVICE
 *
 * -w writes, -r reads; N requests (default 200) of S bytes (default 4096,
 * a multiple of 512) at consecutive offsets from OFFSET; T threads (default
 * 1) issue them concurrently, thread i doing requests i, i+T, i+2T, ...
 * Each request is one pread/pwrite on an O_DIRECT descriptor with an
 * aligned buffer, so each is one block request of S bytes (S up to the
 * device's max_sectors_kb). Prints "ok N" or an error; exit status 0 = all
 * N requests completed in full.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job {
	int fd;
	int write;
	long n, size, threads, index;
	long long offset;
	long done;
	int err;
};

static void *run(void *arg)
{
	struct job *j = arg;
	void *buf;

	if (posix_memalign(&buf, 4096, (size_t)j->size)) {
		j->err = ENOMEM;
		return NULL;
	}
	memset(buf, 0x5a, (size_t)j->size);
	for (long r = j->index; r < j->n; r += j->threads) {
		off_t off = (off_t)(j->offset + r * j->size);
		ssize_t got = j->write ? pwrite(j->fd, buf, (size_t)j->size, off)
				       : pread(j->fd, buf, (size_t)j->size, off);

		if (got != j->size) {
			j->err = got < 0 ? errno : EIO;
			break;
		}
		j->done++;
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = 200, size = 4096, threads = 1, done = 0;
	long long offset = 0;
	int write = -1, opt, fd, err = 0;
	pthread_t *tid;
	struct job *jobs;

	while ((opt = getopt(argc, argv, "wrn:s:t:o:")) != -1) {
		switch (opt) {
		case 'w': write = 1; break;
		case 'r': write = 0; break;
		case 'n': n = atol(optarg); break;
		case 's': size = atol(optarg); break;
		case 't': threads = atol(optarg); break;
		case 'o': offset = atoll(optarg); break;
		default: goto usage;
		}
	}
	if (write < 0 || optind != argc - 1 || n < 1 || size < 512 || size % 512 ||
	    threads < 1 || threads > 1024 || offset % 512)
		goto usage;
	fd = open(argv[optind], (write ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "odirect: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	tid = calloc((size_t)threads, sizeof(*tid));
	jobs = calloc((size_t)threads, sizeof(*jobs));
	if (!tid || !jobs) {
		free(tid);
		free(jobs);
		return 1;
	}
	for (long t = 0; t < threads; t++) {
		jobs[t] = (struct job){ fd, write, n, size, threads, t, offset, 0, 0 };
		if (pthread_create(&tid[t], NULL, run, &jobs[t])) {
			fprintf(stderr, "odirect: pthread_create failed\n");
			return 1;
		}
	}
	for (long t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		done += jobs[t].done;
		if (jobs[t].err)
			err = jobs[t].err;
	}
	close(fd);
	free(tid);
	free(jobs);
	if (err || done != n) {
		fprintf(stderr, "odirect: %ld of %ld requests: %s\n", done, n, strerror(err));
		return 1;
	}
	printf("ok %ld\n", done);
	return 0;
usage:
	fprintf(stderr, "usage: odirect -w|-r [-n N] [-s S] [-t T] [-o OFFSET] DEVICE\n");
	return 2;
}
