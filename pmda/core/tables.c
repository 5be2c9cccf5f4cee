/*
 * The agent's tables, made from metrics/<family>.def: metric descriptors,
 * instance domains, families, and the namespace printed from them
 * (pmdavirt -n).
 */
#include "agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An event record's parameter (indom EVENT_PARAM in the .def): no
 * instances, and values only inside the family's event records. */
enum {
#define VIRT_INDOM(fam, id, serial, text) VIRT_PARAM_##id = 0,
#include "all.def"
	VIRT_PARAM_NOINDOM = 0,
	VIRT_PARAM_EVENT_PARAM = 1
};

const struct virt_metric_info virt_metric_info[VIRT_NMETRICS] = {
#define VIRT_METRIC(fam, id, name, item, type, indom, sem, units) \
	[VIRT_M_##id] = { VIRT_M_##id, VIRT_F_##fam, name, VIRT_PARAM_##indom },
#include "all.def"
};

#define U_NONE	PMDA_PMUNITS(0, 0, 0, 0, 0, 0)
#define U_COUNT	PMDA_PMUNITS(0, 0, 1, 0, 0, PM_COUNT_ONE)
#define U_NSEC	PMDA_PMUNITS(0, 1, 0, 0, PM_TIME_NSEC, 0)
#define U_BYTE	PMDA_PMUNITS(1, 0, 0, PM_SPACE_BYTE, 0, 0)
#define I_NULL	PM_INDOM_NULL
#define SERIAL(id) VIRT_SERIAL_##id
enum {
#define VIRT_INDOM(fam, id, serial, text) VIRT_SERIAL_##id = serial,
#include "all.def"
	VIRT_SERIAL_NOINDOM = -1,
	VIRT_SERIAL_EVENT_PARAM = -1
};
#define INDOM_OF(indom) ((pmInDom)(SERIAL(indom) < 0 ? PM_INDOM_NULL : (pmInDom)SERIAL(indom)))

pmdaMetric virt_metrictab[VIRT_NMETRICS] = {
#define VIRT_METRIC(fam, id, name, item, type, indom, sem, units)		\
	[VIRT_M_##id] = { (void *)&virt_metric_info[VIRT_M_##id],			\
		{ PMDA_PMID(VIRT_CLUSTER_##fam, item), type, INDOM_OF(indom), sem, \
		  U_##units } },
#include "all.def"
};

/* Never called: two metrics with one PMID, or two instance domains with one
 * serial, are duplicate case values here, a compile error. */
int virt_ids_distinct(unsigned int pmid, unsigned int serial);
int virt_ids_distinct(unsigned int pmid, unsigned int serial)
{
	switch (pmid) {
#define VIRT_METRIC(fam, id, name, item, type, indom, sem, units) \
	case PMDA_PMID(VIRT_CLUSTER_##fam, item):
#include "all.def"
		return 1;
	default:
		break;
	}
	switch (serial) {
#define VIRT_INDOM(fam, id, serial, text) case serial:
#include "all.def"
		return 2;
	default:
		return 0;
	}
}

static pmdaInstid module_insts[VIRT_NFAMILIES - 1];

pmdaIndom virt_indomtab[VIRT_NINDOMS] = {
#define VIRT_INDOM(fam, id, serial, text) [VIRT_I_##id] = { serial, 0, NULL },
#include "all.def"
};

const enum virt_family_id virt_indom_family[VIRT_NINDOMS] = {
#define VIRT_INDOM(fam, id, serial, text) [VIRT_I_##id] = VIRT_F_##fam,
#include "all.def"
};

struct virt_family virt_families[VIRT_NFAMILIES] = {
#define VIRT_FAMILY(id, fname, clus) [VIRT_F_##id] = { .name = fname, .cluster = clus },
#include "all.def"
};

pmInDom virt_indom(enum virt_indom_id id)
{
	return virt_indomtab[id].it_indom;
}

pmID virt_pmid(enum virt_metric_id id)
{
	return virt_metrictab[id].m_desc.pmid;
}

void virt_set_reason(struct virt_family *fam, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fam->reason, sizeof(fam->reason), fmt, ap);
	va_end(ap);
}

/* Print the namespace in PMNS syntax (pmdavirt -n): every non-leaf node,
 * outermost first, with its children in table order. Used at build time for
 * the pmns file that Install merges and newhelp compiles the help against. */
static void print_node(const char *node)
{
	size_t len = strlen(node);
	char *kids[VIRT_NMETRICS] = { NULL };
	size_t nkids = 0;

	printf("%s {\n", node);
	for (int m = 0; m < VIRT_NMETRICS; m++) {
		char full[256];
		const char *rest;
		size_t n;
		bool dup = false;

		snprintf(full, sizeof(full), "virt.%s", virt_metric_info[m].name);
		if (strncmp(full, node, len) != 0 || full[len] != '.')
			continue;
		rest = full + len + 1;
		n = strcspn(rest, ".");
		for (size_t k = 0; k < nkids; k++)
			dup |= strlen(kids[k]) == n && strncmp(kids[k], rest, n) == 0;
		if (dup)
			continue;
		kids[nkids++] = strndup(rest, n);
		if (rest[n] == '\0')
			printf("    %s\t%d:%u:%u\n", rest, VIRT_DOMAIN,
			       pmID_cluster(virt_metrictab[m].m_desc.pmid),
			       pmID_item(virt_metrictab[m].m_desc.pmid));
		else
			printf("    %.*s\n", (int)n, rest);
	}
	printf("}\n\n");
	for (size_t k = 0; k < nkids; k++)
		free(kids[k]);
}

void virt_print_pmns(void)
{
	char *nodes[VIRT_NMETRICS * 8] = { NULL };
	size_t nnodes = 0;

	for (int depth = 1; depth < 8; depth++) {
		for (int m = 0; m < VIRT_NMETRICS; m++) {
			char full[256], *p = full;
			bool dup = false;

			snprintf(full, sizeof(full), "virt.%s", virt_metric_info[m].name);
			for (int d = 0; d < depth && p; d++)
				p = strchr(p + 1, '.');
			if (!p)
				continue;
			*p = '\0';
			for (size_t i = 0; i < nnodes; i++)
				dup |= strcmp(nodes[i], full) == 0;
			if (!dup) {
				nodes[nnodes++] = strdup(full);
				print_node(full);
			}
		}
	}
	for (size_t i = 0; i < nnodes; i++)
		free(nodes[i]);
}

/* Instance id == family index: stable across restarts and releases. */
void virt_setup_module_indom(void)
{
	for (int f = 1; f < VIRT_NFAMILIES; f++)
		module_insts[f - 1] = (pmdaInstid){ f, (char *)virt_families[f].name };
	virt_indomtab[VIRT_I_MODULE].it_numinst = VIRT_NFAMILIES - 1;
	virt_indomtab[VIRT_I_MODULE].it_set = module_insts;
}
