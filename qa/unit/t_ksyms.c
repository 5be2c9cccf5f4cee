/* virt_ksym_scan: /proc/kallsyms lines, module suffixes, hidden
 * addresses, names absent, the first line of a name winning. */
#include "unit.h"
#include "agent.h"

static const char text[] =
	"ffffffff81000000 T _stext\n"
	"ffffffffc05063f0 t handle_tx_kick\t[vhost_net]\n"
	"ffffffffc0505cc0 t handle_rx_kick\t[vhost_net]\n"
	"ffffffffc0600000 t handle_tx_kick\t[other]\n"
	"0000000000000000 t hidden_fn\n"
	"garbage line\n"
	"ffffffff81000010 T handle_tx_kick_suffix\n";

int main(void)
{
	const char *names[] = { "handle_tx_kick", "handle_rx_kick", "hidden_fn", "absent", "handle_tx" };
	uint64_t addrs[5] = { 0 };
	bool present[5] = { false };
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	int found = virt_ksym_scan(f, names, addrs, present, 5);

	fclose(f);
	CHECK(found == 3);
	CHECK(present[0] && addrs[0] == 0xffffffffc05063f0ULL);	/* first of two */
	CHECK(present[1] && addrs[1] == 0xffffffffc0505cc0ULL);
	CHECK(present[2] && addrs[2] == 0);			/* kptr_restrict */
	CHECK(!present[3] && addrs[3] == 0);
	CHECK(!present[4]);					/* no prefix match */
	return UNIT_DONE();
}
