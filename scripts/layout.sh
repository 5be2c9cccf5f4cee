#!/bin/sh
# The layout list behind every module's layout hash (pmda/core/layout.h):
# each struct, union and enum that the headers a module may include
# (pmda/core/virt.h, ids.h, rows.h, slots.h, hist.h, config.h, array.h, vmid.h) define,
# with its members (fields, enumerators) in order, read from clang's AST of
# those headers. Enums whose constants come from the metric tables are
# left out: VIRT_TABLES_CRC covers them. One line per record:
#   VIRT_LAYOUT_RECORD(struct virt_row, <n>, VIRT_LAYOUT_FIELD(<n>, struct virt_row, name) ...)
# <n> numbers every entry of the file once, in order. The hash itself is
# computed by the compiler, with the flags of the object it goes into.
# usage: scripts/layout.sh CLANG CFLAGS... > build/layout.def
clang=$1; shift
probe=$(mktemp --suffix=.c) || exit 1
trap 'rm -f "$probe"' EXIT
printf '#include "virt.h"\n#include "rows.h"\n#include "slots.h"\n#include "hist.h"\n#include "config.h"\n#include "array.h"\n#include "vmid.h"\n' > "$probe"
"$clang" "$@" -DVIRT_LAYOUT_PROBE -fsyntax-only -fno-color-diagnostics \
	-Xclang -ast-dump "$probe" > "$probe.ast" || { rm -f "$probe.ast"; exit 1; }
awk '
function flush() {
	if (rec != "" && keep && n > 0)
		print "VIRT_LAYOUT_RECORD(" rec ", " recno "," body ")"
	else if (rec != "")
		next_no = recno		# give back the numbers of a dropped record
	rec = ""
}
# the file of a location: clang names it only where it changes
{
	for (i = 1; i <= NF; i++) {
		t = $i; sub(/^</, "", t); sub(/[,>]$/, "", t)
		if (t ~ /:[0-9]+:[0-9]+$/ && t !~ /^(line|col):/) {
			sub(/:[0-9]+:[0-9]+$/, "", t); file = t
		}
	}
	core = (file ~ /(^|\/)pmda\/core\/[a-z_]+\.h$/)
}
/^[|`]-/ {
	flush()
	if (core && $1 ~ /RecordDecl$/ && $NF == "definition") {
		rec = $(NF - 2) " " $(NF - 1); recno = next_no++; body = ""; n = 0; keep = 1
	} else if (core && $1 ~ /EnumDecl$/) {
		rec = "enum " $NF; recno = next_no++; body = ""; n = 0; keep = 1
	}
	next
}
rec != "" && /^[|`] [|`]-FieldDecl / {
	q = index($0, "\x27"); pre = substr($0, 1, q - 1); type = substr($0, q)
	m = split(pre, w, " "); name = w[m]
	if (name ~ /^(col|line):/ || name ~ /[<>]/) { print "layout.sh: " rec ": an unnamed member" > "/dev/stderr"; exit 1 }
	kind = (type ~ /\[\]\x27/) ? "VIRT_LAYOUT_FLEX" : "VIRT_LAYOUT_FIELD"
	body = body " " kind "(" next_no++ ", " rec ", " name ")"; n++
	next
}
rec != "" && /^[|`] [|`]-EnumConstantDecl / {
	if (!core) keep = 0		# from the metric tables
	q = index($0, "\x27"); pre = substr($0, 1, q - 1)
	m = split(pre, w, " ")
	body = body " VIRT_LAYOUT_ENUMERATOR(" next_no++ ", " w[m] ")"; n++
	next
}
END { flush() }
' "$probe.ast"
rc=$?
rm -f "$probe.ast"
exit $rc
