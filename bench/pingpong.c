/* pingpong N [CPU]: two threads, both pinned to CPU (default 0), pass one
 * byte back and forth over two pipes N times: every round trip blocks each
 * thread once, so the CPU switches at least twice per round trip (more
 * when other runnable tasks share it). Prints "run_ns <ns>" and
 * "switches <n>" (the two threads' voluntary + involuntary switches out,
 * getrusage RUSAGE_THREAD). The sched bench's event generator. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds;
static int cpu;
static long thread_switches[2];

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("pingpong: sched_setaffinity");
		exit(1);
	}
}

static long my_switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void *pong(void *arg)
{
	long s0;
	char c;

	(void)arg;
	pin();
	s0 = my_switches();
	for (long i = 0; i < rounds; i++) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) {
			perror("pingpong: pong");
			exit(1);
		}
	}
	thread_switches[1] = my_switches() - s0;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long long t0, t1;
	long s0;
	char c = 'x';

	if (argc < 2 || argc > 3 || (rounds = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: pingpong N [CPU]\n");
		return 2;
	}
	cpu = argc == 3 ? atoi(argv[2]) : 0;
	if (pipe(ab) != 0 || pipe(ba) != 0) {
		perror("pingpong: pipe");
		return 1;
	}
	pin();
	if (pthread_create(&t, NULL, pong, NULL) != 0) {
		fprintf(stderr, "pingpong: pthread_create failed\n");
		return 1;
	}
	s0 = my_switches();
	t0 = now_ns();
	for (long i = 0; i < rounds; i++) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) {
			perror("pingpong: ping");
			return 1;
		}
	}
	t1 = now_ns();
	thread_switches[0] = my_switches() - s0;
	pthread_join(t, NULL);
	printf("run_ns %lld\nswitches %ld\n", t1 - t0, thread_switches[0] + thread_switches[1]);
	return 0;
}
