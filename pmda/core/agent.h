/*
 * Inside the agent: what its files (pmdavirt.c main loop, tables.c,
 * settings.c, lifecycle.c, attach.c, log.c, fetch.c ...) share. Modules
 * see only virt.h.
 */
#ifndef VIRT_AGENT_H
#define VIRT_AGENT_H

#include "virt.h"

#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>

/* tables.c: from metrics/<family>.def */
struct virt_metric_info {
	enum virt_metric_id id;
	enum virt_family_id family;
	const char *name;		/* below "virt." */
	bool event_param;		/* a parameter of event records: no values alone */
};
extern const struct virt_metric_info virt_metric_info[VIRT_NMETRICS];
extern pmdaMetric virt_metrictab[VIRT_NMETRICS];
extern pmdaIndom virt_indomtab[VIRT_NINDOMS];
extern const enum virt_family_id virt_indom_family[VIRT_NINDOMS];
extern struct virt_family virt_families[VIRT_NFAMILIES];
void virt_print_pmns(void);		/* pmdavirt -n */
void virt_setup_module_indom(void);

/* settings.c */
extern const char *virt_config_path, *virt_module_dir;
extern unsigned long long virt_poll_ms;
void virt_load_modules(void);
void virt_load_config(void);
void virt_print_config(void);		/* pmdavirt -C */
int virt_modules_refused(void);		/* and its exit status */
struct virt_answer;
int virt_answers_check(enum virt_family_id f, const struct virt_answer *answers, char *why,
		       size_t len);

/* attach.c: one attach of a family's skeleton (virt.h: struct
 * virt_attach_ops), or NULL with fam->reason listing each method's failure
 * and *rc -ENOENT, or VIRT_NOT_YET when a method found nothing to attach
 * to yet; and its destruction (NULL is fine) */
struct virt_skel *virt_attach_skel(struct virt_family *fam, const struct virt_attach_ops *ops,
				   int *rc);
void virt_skel_destroy(struct virt_skel *skel);

/* btftargets.c: fentry, fexit and tp_btf targets from one index of kernel
 * BTF names: register once before any BPF object is opened; release after
 * each attach pass. */
int virt_btf_targets_register(void);
void virt_btf_targets_release(void);

/* maps.c: the CPUs a per-CPU value has (possible CPUs); a per-CPU value
 * of nwords u64 summed into out[nwords]; the total of a per-CPU array of n
 * u64 counters (a family's drops) */
int virt_ncpus(void);
void virt_percpu_sum(const void *percpu, size_t nwords, uint64_t *out);
uint64_t virt_percpu_counters_total(int fd, struct virt_bulk *b, unsigned int n);

/* log.c: libbpf's messages into the PMDA log; an attach's lines held
 * (virt_log_hold) and written or dropped (virt_log_release) */
int virt_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap);
void virt_log_hold(void);
void virt_log_release(bool write);

/* lifecycle.c */
extern uint64_t virt_refreshes;
void virt_poll_families(void);		/* every poll interval and at start */
void virt_refresh_family(struct virt_family *fam);
void virt_shutdown_families(void);
uint64_t virt_retry_wait_ns(const struct virt_family *fam);	/* retry_wait */

/* progstats.c: run time and runs of each family's own BPF programs */
void virt_progstats_hold(bool on);	/* [agent] bpf_stats: hold BPF_ENABLE_STATS */
void virt_progstats_refresh(void);	/* once per fetch that asks for them */
void virt_progstats_fold(struct virt_family *fam);	/* before its object goes */
int virt_progstats_fetch(const struct virt_family *fam, bool runs, pmAtomValue *atom);

/* dropped.c: virt.control.module.dropped, monotonic across re-attaches */
void virt_dropped_update(struct virt_family *fam);	/* after each refresh */
void virt_dropped_fold(struct virt_family *fam);	/* after the module's detach */
uint64_t virt_dropped(const struct virt_family *fam);

/* ksyms.c: virt_ksym_lookup's /proc/kallsyms pass ("addr type name
 * [module]" lines; the first line with a name wins) */
int virt_ksym_scan(FILE *f, const char *const names[], uint64_t addrs[], bool present[],
		   unsigned int n);

/* fetch.c: the PMDA callbacks */
int virt_fetch(int numpmid, pmID *pmidlist, pmResult **resp, pmdaExt *pmda);
int virt_instance(pmInDom indom, int inst, char *name, pmInResult **result, pmdaExt *pmda);
int virt_fetch_callback(pmdaMetric *mdesc, unsigned int inst, pmAtomValue *atom);

/* labels.c: instance labels from the modules (pmdaSetLabelCallBack) */
int virt_label_callback(pmInDom indom, unsigned int inst, pmLabelSet **lp);

static inline uint64_t virt_now_ms(void)
{
	return virt_mono_ns() / 1000000;
}

#endif
