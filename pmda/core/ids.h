/*
 * The ids the metric tables (metrics/<family>.def, build/all.def) give
 * metrics, instance domains, clusters and families: what the agent and
 * modules name them by. Types only, so that the shared headers (rows.h,
 * slots.h) need not include virt.h, which includes them (layout.h).
 */
#ifndef VIRT_IDS_H
#define VIRT_IDS_H

/* Global metric ids: VIRT_M_<ID> for every VIRT_METRIC in metrics/<family>.def. */
enum virt_metric_id {
#define VIRT_METRIC(fam, id, name, item, type, indom, sem, units) VIRT_M_##id,
#include "all.def"
	VIRT_NMETRICS
};

/* Instance domains: VIRT_I_<ID>, indexes into the agent's pmdaIndom table. */
enum virt_indom_id {
#define VIRT_INDOM(fam, id, serial, text) VIRT_I_##id,
#include "all.def"
	VIRT_NINDOMS
};

enum virt_cluster {
#define VIRT_FAMILY(id, name, cluster) VIRT_CLUSTER_##id = cluster,
#include "all.def"
};

enum virt_family_id {
#define VIRT_FAMILY(id, name, cluster) VIRT_F_##id,
#include "all.def"
	VIRT_NFAMILIES
};

#endif
