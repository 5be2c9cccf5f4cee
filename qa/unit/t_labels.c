/* Instance labels (pmda/core/labels.c): JSON of virt_label_add and
 * virt_label_vm through libpcp_pmda's pmdaAddLabels, virt_label_queue, and
 * virt_label_callback asking the module that owns an instance domain.
 * The agent's tables are stand-ins here. */
#include "agent.h"
#include "vmid.h"
#include "unit.h"

#include <string.h>

pmdaIndom virt_indomtab[VIRT_NINDOMS];
const enum virt_family_id virt_indom_family[VIRT_NINDOMS] = { [VIRT_NINDOMS - 1] = VIRT_NFAMILIES - 1 };
struct virt_family virt_families[VIRT_NFAMILIES];

static int asked_indom = -1;
static unsigned int asked_inst;

static int fake_labels(struct virt_family *fam, enum virt_indom_id indom, unsigned int inst,
		       pmLabelSet **lp)
{
	(void)fam;
	asked_indom = (int)indom;
	asked_inst = inst;
	if (inst == 99)
		return 0;
	return virt_label_add(lp, "queue", "tx");
}

static const struct virt_module fake = { .name = "fake", .labels = fake_labels };

static int json_is(pmLabelSet *ls, const char *want)
{
	char got[1024];

	if (!ls)
		return want == NULL;
	snprintf(got, sizeof(got), "%.*s", ls->jsonlen, ls->json);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "labels %s, want %s\n", got, want);
	return strcmp(got, want) == 0;
}

static void check_vm(void)
{
	struct vmid vm = { .pid = 4242, .vmm = VMID_QEMU, .named = true, .name = "web01",
			   .label = "web01", .uuid = "5f2c9b1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f" };
	pmLabelSet *ls = NULL;

	CHECK(virt_label_vm(&ls, &vm) == 0);
	CHECK(ls && ls->nlabels == 4);
	/* pmdaAddLabels keeps the set sorted by name */
	CHECK(json_is(ls, "{\"vm_name\":\"web01\",\"vm_uuid\":\"5f2c9b1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f\","
			  "\"vmm\":\"qemu\",\"vmm_pid\":4242}"));
	/* vmm_pid alone is optional: not part of a pmseries identity */
	for (int i = 0; ls && i < ls->nlabels; i++) {
		bool pid = ls->labels[i].namelen == 7 &&
			   strncmp(ls->json + ls->labels[i].name, "vmm_pid", 7) == 0;

		CHECK(!!(ls->labels[i].flags & PM_LABEL_OPTIONAL) == pid);
	}
	pmFreeLabelSets(ls, 1);
	/* no name, no UUID: only what is known */
	vm.named = false;
	vm.uuid[0] = '\0';
	vm.vmm = VMID_FIRECRACKER;
	ls = NULL;
	CHECK(virt_label_vm(&ls, &vm) == 0 && ls && ls->nlabels == 2);
	CHECK(json_is(ls, "{\"vmm\":\"firecracker\",\"vmm_pid\":4242}"));
	pmFreeLabelSets(ls, 1);
	ls = NULL;
	CHECK(virt_label_vm(&ls, NULL) == 0 && ls == NULL);
}

/* vm_name is the exact name (libvirt's "web 01"), not the instance's web_01,
 * escaped for JSON whatever its bytes, and whole at VMID_LABEL_MAX */
static void check_vm_exact(void)
{
	struct vmid vm = { .pid = 7, .vmm = VMID_QEMU };
	char big[301], want[2048];
	pmLabelSet *ls = NULL;

	vmid_set_name(&vm, "web 01");
	CHECK(strcmp(vm.name, "web_01") == 0);
	CHECK(virt_label_vm(&ls, &vm) == 0);
	CHECK(json_is(ls, "{\"vm_name\":\"web 01\",\"vmm\":\"qemu\",\"vmm_pid\":7}"));
	pmFreeLabelSets(ls, 1);
	ls = NULL;
	vmid_set_name(&vm, "ev\"il\\-na::me\001\033[31m-caf\xc3\xa9\xff");
	CHECK(virt_label_vm(&ls, &vm) == 0);
	CHECK(json_is(ls, "{\"vm_name\":\"ev\\\"il\\\\-na::me\\u0001\\u001b[31m-caf\xc3\xa9\xef\xbf\xbd\","
			  "\"vmm\":\"qemu\",\"vmm_pid\":7}"));
	pmFreeLabelSets(ls, 1);
	ls = NULL;
	/* the longest name of control bytes: every one escaped, none lost */
	memset(big, '\001', 300);
	big[300] = '\0';
	vmid_set_name(&vm, big);
	CHECK(virt_label_vm(&ls, &vm) == 0);
	snprintf(want, sizeof(want), "{\"vm_name\":\"");
	for (int i = 0; i < VMID_LABEL_MAX; i++)
		strcat(want, "\\u0001");
	strcat(want, "\",\"vmm\":\"qemu\",\"vmm_pid\":7}");
	CHECK(ls && ls->jsonlen == (int)strlen(want) && strncmp(ls->json, want, strlen(want)) == 0);
	pmFreeLabelSets(ls, 1);
}

static void check_escape(void)
{
	pmLabelSet *ls = NULL;

	CHECK(virt_label_add(&ls, "device", "a\"b\\c\nd") == 0);
	CHECK(json_is(ls, "{\"device\":\"a\\\"b\\\\c\\u000ad\"}"));
	pmFreeLabelSets(ls, 1);
}

/* "<device>/<queue>": device, driver when given, queue (the rest, '/'s
 * and all); no '/' (or a device too long to be one): no labels */
static void check_queue(void)
{
	char longdev[300];
	pmLabelSet *ls = NULL;

	CHECK(virt_label_queue(&ls, "virtio1/req.0", "virtio_blk") == 0 && ls && ls->nlabels == 3);
	CHECK(json_is(ls, "{\"device\":\"virtio1\",\"driver\":\"virtio_blk\",\"queue\":\"req.0\"}"));
	pmFreeLabelSets(ls, 1);
	ls = NULL;
	CHECK(virt_label_queue(&ls, "net0/tx/x", "") == 0 && ls && ls->nlabels == 2);
	CHECK(json_is(ls, "{\"device\":\"net0\",\"queue\":\"tx/x\"}"));
	pmFreeLabelSets(ls, 1);
	ls = NULL;
	CHECK(virt_label_queue(&ls, "net0", NULL) == 0 && ls == NULL);
	memset(longdev, 'd', sizeof(longdev));
	snprintf(longdev + sizeof(longdev) - 3, 3, "/q");
	CHECK(virt_label_queue(&ls, longdev, NULL) == 0 && ls == NULL);
}

static void check_callback(void)
{
	pmInDom a = pmInDom_build(VIRT, 7), b = pmInDom_build(VIRT, 8);
	pmLabelSet set = { 0 }, *ls = &set;

	virt_indomtab[VIRT_NINDOMS - 1].it_indom = a;
	/* no module for the family: no labels */
	CHECK(virt_label_callback(a, 3, &ls) == 0);
	virt_families[VIRT_NFAMILIES - 1].mod = &fake;
	CHECK(virt_label_callback(a, 3, &ls) == 1);
	CHECK(asked_indom == VIRT_NINDOMS - 1 && asked_inst == 3);
	CHECK(json_is(ls, "{\"queue\":\"tx\"}"));
	free(set.json);
	free(set.labels);
	memset(&set, 0, sizeof(set));
	CHECK(virt_label_callback(a, 99, &ls) == 0);
	/* an instance domain nobody owns */
	asked_indom = -1;
	CHECK(virt_label_callback(b, 1, &ls) == 0 && asked_indom == -1);
}

int main(void)
{
	check_vm();
	check_vm_exact();
	check_escape();
	check_queue();
	check_callback();
	return UNIT_DONE();
}
