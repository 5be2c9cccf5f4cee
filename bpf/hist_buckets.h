/* Number of log2 buckets in every histogram; shared by BPF and user side. */
#ifndef VIRT_HIST_BUCKETS
#define VIRT_HIST_BUCKETS 40
#endif
