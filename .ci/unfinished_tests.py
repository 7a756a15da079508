#!/usr/bin/env python3
"""Prints the tests a `swift test` log shows started and never finished (a hang's suspects)."""
import re
import sys
from collections import Counter

started, finished = Counter(), Counter()
order = []
with open(sys.argv[1], errors="replace") as log:
    for line in log:
        line = line.rstrip("\n")
        begun = re.match(r"◇ Test (.*?) started\.$", line)
        if begun and begun.group(1) != "run" and not begun.group(1).startswith("case "):
            started[begun.group(1)] += 1
            order.append(begun.group(1))
        ended = re.match(r"^[✔✘━] Test (.*?)(?: with \d+ test cases?)? (?:passed|failed) after ", line)
        if ended:
            finished[ended.group(1)] += 1
unfinished = [name for name in dict.fromkeys(order) if started[name] > finished[name]]
for name in unfinished:
    print(f"  {name}")
if not unfinished:
    print("  (none: the run hung outside a test, or before the first)")
