# Instance-domain help from metrics/*.def (pminfo -T of an instance domain,
# pmLookupInDomText): the one-line text of each VIRT_INDOM and the metrics
# whose instances it names. Run with -v domain=N over every .def file.
# a C string literal's text: no enclosing quotes, \" as "
function unquote(s) { gsub(/^ *"|" *$/, "", s); gsub(/\\"/, "\"", s); return s }
function wrap(text,   n, w, i, line) {
	n = split(text, w, " ")
	line = w[1]
	for (i = 2; i <= n; i++) {
		if (length(line) + 1 + length(w[i]) > 72) { print line; line = w[i] }
		else line = line " " w[i]
	}
	print line; print ""
}
/^VIRT_INDOM\(/ {
	sub(/^VIRT_INDOM\(/, ""); sub(/\) *$/, "")
	n = split($0, f, ", ")
	text = f[4]; for (i = 5; i <= n; i++) text = text ", " f[i]
	id[++nindom] = f[2]; serial[f[2]] = f[3]; oneline[f[2]] = unquote(text)
}
/^VIRT_METRIC\(/ {
	sub(/^VIRT_METRIC\(/, "")
	split($0, f, ", ")
	users[f[6]] = users[f[6]] (users[f[6]] ? ", " : "") "virt." unquote(f[3])
}
END {
	for (i = 1; i <= nindom; i++) {
		d = id[i]
		printf "@ %d.%d %s\n", domain, serial[d], oneline[d]
		wrap("Instance domain of " (users[d] ? users[d] : "no metric") ".")
	}
}
