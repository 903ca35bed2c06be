#!/usr/bin/env python3
"""Checks a Prometheus text exposition beyond what promtool 2.42 checks:
every series (name + label set) appears once, every sample's family has
HELP and TYPE before it (a histogram's _bucket/_sum/_count samples count
as its family's), families are contiguous, values parse, label
values use only the three legal escapes."""
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\[\\"n])*)"(,|$)')


def parse_labels(s):
    out, pos = [], 0
    while pos < len(s):
        m = LABEL.match(s, pos)
        if not m:
            raise ValueError("bad labels at %r" % s[pos:pos + 40])
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    names = [n for n, _ in out]
    if len(names) != len(set(names)):
        raise ValueError("duplicate label name in %r" % s)
    return tuple(sorted(out))


def main(path):
    seen, helps, types, done = set(), set(), set(), set()
    histograms = set()
    current = None
    errors = 0
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            name = line.split(" ")[2]
            (helps if line[2] == "H" else types).add(name)
            if line.startswith("# TYPE ") and line.split(" ")[3] in ("histogram", "summary"):
                histograms.add(name)
            if name != current:
                if name in done:
                    print("line %d: family %s is not contiguous" % (n, name)); errors += 1
                if current:
                    done.add(current)
                current = name
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            print("line %d: cannot parse %r" % (n, line)); errors += 1; continue
        name = m.group(1)
        # A histogram's samples carry its name plus _bucket, _sum or _count.
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[:-len(suffix)] in histograms:
                name = name[:-len(suffix)]
        if name != current or name not in helps or name not in types:
            print("line %d: %s has no HELP/TYPE before it" % (n, name)); errors += 1
        try:
            labels = parse_labels(m.group(3) or "")
            float(m.group(4).replace("Inf", "inf"))
        except ValueError as e:
            print("line %d: %s" % (n, e)); errors += 1; continue
        key = (m.group(1), labels)
        if key in seen:
            print("line %d: duplicate series %s%s" % (n, name, m.group(2) or "")); errors += 1
        seen.add(key)
    print("%d series checked, %d problems" % (len(seen), errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
