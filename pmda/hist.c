#include "hist.h"

#include <stdio.h>

unsigned int virt_bucket_of(uint64_t v)
{
	unsigned int b = v ? 63 - (unsigned int)__builtin_clzll(v) : 0;

	return b < VIRT_HIST_BUCKETS ? b : VIRT_HIST_BUCKETS - 1;
}

int virt_bucket_name(char *buf, size_t len, const char *prefix, unsigned int b)
{
	return snprintf(buf, len, "%s::%llu-%llu", prefix,
			(unsigned long long)virt_bucket_lo(b),
			(unsigned long long)virt_bucket_hi(b));
}

void virt_sanitize(char *dst, size_t len, const char *src)
{
	size_t i;

	if (len == 0)
		return;
	for (i = 0; i + 1 < len && src[i]; i++) {
		unsigned char c = (unsigned char)src[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			 c == ':' || c == '/';

		dst[i] = src[i];
		if (!ok)
			dst[i] = '_';
	}
	dst[i] = '\0';
}
