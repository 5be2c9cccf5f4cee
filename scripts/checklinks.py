#!/usr/bin/python3
"""Check the relative links of Markdown files: every [text](target) that is
not a URL must name an existing file (relative to the file it is in) and,
with #anchor, a heading of that Markdown file (GitHub's anchor rules).
Usage: scripts/checklinks.py [FILE.md...]  (default: README.md doc/*.md)
Exit status 1 and one line per broken link when any is broken."""
import glob
import os
import re
import sys

LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`[^`\n]*`")


def body_lines(path):
    """(line number, text) outside fenced code blocks"""
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"^\s*(```+|~~~+)", line)
            if m:
                if fence is None:
                    fence = m.group(1)[:3]
                elif m.group(1).startswith(fence):
                    fence = None
                continue
            if fence is None:
                yield n, line.rstrip("\n")


def slug(heading):
    """GitHub's anchor of a heading: lower case, inline markup and
    punctuation gone (letters, digits, '_', '-' and spaces stay), spaces
    to '-'"""
    text = LINK.sub(lambda m: m.group(1), heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, found = {}, set()
        for _, line in body_lines(path):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(1))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else "%s-%d" % (s, k))
        _anchors[path] = found
    return _anchors[path]


def check(path):
    bad = []
    for n, line in body_lines(path):
        for m in LINK.finditer(CODE.sub("", line)):
            target = m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto: ...
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                bad.append("%s:%d: %s: no such file" % (path, n, target))
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                bad.append("%s:%d: %s: no such heading in %s" % (path, n, target, dest))
    return bad


def main(args):
    files = args or ["README.md"] + sorted(glob.glob("doc/*.md"))
    bad = [b for f in files for b in check(f)]
    for b in bad:
        print(b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
