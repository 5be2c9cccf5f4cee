/*
 * Why vhost keeps its own per-client stall-event cursors (doc/design.md,
 * "Event records"): libpcp_pmda's event queues (pmdaEventNewQueue,
 * pmdaEventQueueAppend, pmdaEventQueueRecords, pmdaEventNewClient) as the
 * installed PCP implements them. Each check is a behaviour vhost's
 * records must not have; if a PCP release fixes them, this test fails and
 * the module can move onto the library.
 */
#include "unit.h"

#include <pcp/pmapi.h>
#include <pcp/pmda.h>
#include <string.h>
#include <sys/time.h>

#define RECORD_BYTES 4

static unsigned int seen[16], nseen;

static int decode(int array, void *buf, size_t size, struct timeval *tv, void *arg)
{
	unsigned int v;

	(void)size, (void)arg;
	memcpy(&v, buf, sizeof(v));
	if (nseen < 16)
		seen[nseen++] = v;
	return pmdaEventAddRecord(array, tv, PM_EVENT_FLAG_POINT) < 0 ? -1 : 1;
}

/* One fetch of the queue by a client context: the records it got. */
static unsigned int fetch(int q, int ctx)
{
	pmAtomValue atom;

	nseen = 0;
	pmdaEventSetAccess(ctx, q, 1);
	pmdaEventQueueRecords(q, &atom, ctx, decode, NULL);
	return nseen;
}

static void append(int q, unsigned int from, unsigned int to)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	for (unsigned int v = from; v <= to; v++)
		pmdaEventQueueAppend(q, &v, RECORD_BYTES, &tv);
}

int main(void)
{
	int q = pmdaEventNewQueue("t_pcp_queues", 3 * RECORD_BYTES);

	pmdaEventNewClient(1);
	pmdaEventNewClient(2);
	fetch(q, 1);			/* both clients join the queue */
	fetch(q, 2);
	append(q, 1, 2);
	/* client 1 reads records 1 and 2, then again: client 2 has not
	 * read them, and a client's place is not kept between fetches */
	CHECK(fetch(q, 1) == 2 && seen[0] == 1);
	CHECK(fetch(q, 1) == 2 && seen[0] == 1);	/* the same two again */
	/* records pushed out unread (3 and 4 of 5) are not reported as
	 * missed to the client that lost them */
	append(q, 3, 7);
	CHECK(fetch(q, 2) == 3 && seen[0] == 5);	/* no missed record */
	return UNIT_DONE();
}
