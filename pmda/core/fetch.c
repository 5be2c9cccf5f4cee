/*
 * Fetches: refresh the families a request names, then answer each value:
 * the agent's own status metrics here, a family's from its rows as its
 * module's answers table says (pmda/core/answers.c).
 */
#include "agent.h"
#include "rows.h"

#include <stddef.h>
#include <stdio.h>

#define VIRT_VERSION "0.1.0"

/* The request the refreshes are for (virt_asked). */
static struct {
	int n;
	const pmID *pmids;
	pmInDom indom;
} asked = { 0, NULL, PM_INDOM_NULL };

bool virt_asked(enum virt_metric_id id)
{
	for (int i = 0; i < asked.n; i++)
		if (asked.pmids[i] == virt_metrictab[id].m_desc.pmid)
			return true;
	return false;
}

bool virt_asked_indom(enum virt_indom_id indom)
{
	return asked.indom != PM_INDOM_NULL && asked.indom == virt_indom(indom);
}

int virt_fetch(int numpmid, pmID *pmidlist, pmResult **resp, pmdaExt *pmda)
{
	bool want[VIRT_NFAMILIES] = { false }, cost = false;

	for (int i = 0; i < numpmid; i++) {
		unsigned int cluster = pmID_cluster(pmidlist[i]);

		cost |= pmidlist[i] == virt_metrictab[VIRT_M_MODULE_PROG_TIME].m_desc.pmid ||
			pmidlist[i] == virt_metrictab[VIRT_M_MODULE_PROG_RUNS].m_desc.pmid;

		for (int f = 1; f < VIRT_NFAMILIES; f++)
			if ((unsigned int)virt_families[f].cluster == cluster)
				want[f] = true;
	}
	asked.n = numpmid;
	asked.pmids = pmidlist;
	for (int f = 1; f < VIRT_NFAMILIES; f++)
		if (want[f])
			virt_refresh_family(&virt_families[f]);
	asked.n = 0;
	if (cost)
		virt_progstats_refresh();
	return pmdaFetch(numpmid, pmidlist, resp, pmda);
}

int virt_instance(pmInDom indom, int inst, char *name, pmInResult **result,
		  pmdaExt *pmda)
{
	asked.indom = indom;
	for (int i = 0; i < VIRT_NINDOMS; i++)
		if (virt_indomtab[i].it_indom == indom)
			virt_refresh_family(&virt_families[virt_indom_family[i]]);
	asked.indom = PM_INDOM_NULL;
	return pmdaInstance(indom, inst, name, result, pmda);
}

static const char *status_string(const struct virt_family *fam, char *buf, size_t len)
{
	switch (fam->state) {
	case VIRT_ACTIVE:
		return "active";
	case VIRT_DISABLED:
		if (!fam->reason[0])
			return "disabled";
		snprintf(buf, len, "disabled: %s", fam->reason);
		return buf;
	case VIRT_UNAVAILABLE:
		snprintf(buf, len, "unavailable: %s", fam->reason[0] ? fam->reason : "unknown");
		return buf;
	}
	return "?";
}

/* Status metrics that are a counter of struct virt_family as it is. */
static const struct {
	enum virt_metric_id id;
	size_t off;
} family_words[] = {
	{ VIRT_M_MODULE_ATTACH_ATTEMPTS, offsetof(struct virt_family, attach_attempts) },
	{ VIRT_M_MODULE_REFRESH_NS, offsetof(struct virt_family, refresh_ns) },
	{ VIRT_M_MODULE_REFRESH_CPU_NS, offsetof(struct virt_family, refresh_cpu_ns) },
};

static int fetch_control(enum virt_metric_id id, unsigned int inst, pmAtomValue *atom)
{
	static char status[VIRT_NFAMILIES][VIRT_REASON_MAX + 32];
	struct virt_family *fam;

	if (id == VIRT_M_VERSION) {
		atom->cp = VIRT_VERSION;
		return PMDA_FETCH_STATIC;
	}
	if (id == VIRT_M_REFRESHES) {
		atom->ull = virt_refreshes;
		return PMDA_FETCH_STATIC;
	}
	if (id == VIRT_M_BPF_CALLS) {
		atom->ull = virt_bpf_syscalls;
		return PMDA_FETCH_STATIC;
	}
	if (inst == 0 || inst >= VIRT_NFAMILIES)
		return PM_ERR_INST;
	fam = &virt_families[inst];
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(family_words); i++)
		if (family_words[i].id == id) {
			atom->ull = *(const uint64_t *)(const void *)((const char *)fam +
								     family_words[i].off);
			return PMDA_FETCH_STATIC;
		}
	switch (id) {
	case VIRT_M_MODULE_STATUS:
		atom->cp = (char *)status_string(fam, status[inst], sizeof(status[inst]));
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_METHOD:
		atom->cp = fam->state == VIRT_ACTIVE ? fam->method : "none";
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_DROPPED:
		atom->ull = virt_dropped(fam);
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_PROGRAMS:
		atom->ul = fam->state == VIRT_ACTIVE ? fam->programs : 0;
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_ATTACH_NS:
		if (fam->state != VIRT_ACTIVE)
			return PMDA_FETCH_NOVALUES;
		atom->ull = fam->attach_ns;
		return PMDA_FETCH_STATIC;
	case VIRT_M_MODULE_PROG_TIME:
	case VIRT_M_MODULE_PROG_RUNS:
		return virt_progstats_fetch(fam, id == VIRT_M_MODULE_PROG_RUNS, atom);
	case VIRT_M_MODULE_RETRY_WAIT:
		atom->ull = virt_retry_wait_ns(fam);
		return PMDA_FETCH_STATIC;
	default:
		return PM_ERR_PMID;
	}
}

int virt_fetch_callback(pmdaMetric *mdesc, unsigned int inst, pmAtomValue *atom)
{
	const struct virt_metric_info *mi = mdesc->m_user;
	struct virt_family *fam = &virt_families[mi->family];

	if (mi->family == VIRT_F_CONTROL)
		return fetch_control(mi->id, inst, atom);
	if (fam->state != VIRT_ACTIVE || mi->event_param || !fam->mod->answers)
		return PMDA_FETCH_NOVALUES;
	return virt_answer(&fam->mod->answers[mi->id], fam, inst, atom);
}

