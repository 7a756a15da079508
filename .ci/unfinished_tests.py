#!/usr/bin/env python3
"""Prints the tests a `swift test` log shows started and never finished (a hang's suspects)."""
import re
import sys

started, finished = [], set()
with open(sys.argv[1], errors="replace") as log:
    for line in log:
        begun = re.match(r"◇ Test (.*?) started\.$", line.rstrip("\n"))
        if begun and begun.group(1) != "run" and not begun.group(1).startswith("case "):
            started.append(begun.group(1))
        ended = re.match(r"[✔✘] Test (.*?)(?: with \d+ test cases?)? (?:passed|failed)", line)
        if ended:
            finished.add(ended.group(1))
unfinished = [name for name in dict.fromkeys(started) if name not in finished]
for name in unfinished:
    print(f"  {name}")
if not unfinished:
    print("  (none: the run hung outside a test, or before the first)")
