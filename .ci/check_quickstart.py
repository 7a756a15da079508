"""Checks that the README's quick start is, line for line, the body of QuickStartTests.

The README shows the code between "<!-- quick-start -->" and the end of its ```swift
block; the test holds the same lines between "// quick-start begin" and
"// quick-start end", so `swift test` compiles and runs exactly what users copy.
"""
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent.parent
readme = (root / "README.md").read_text().splitlines()
test = (root / "Tests/ConvergeTests/QuickStartTests.swift").read_text().splitlines()

start = readme.index("<!-- quick-start -->")
fence = start + 1
assert readme[fence].strip() == "```swift", "quick start block must follow the marker"
end = readme.index("```", fence + 1)
shown = [line for line in readme[fence + 1:end] if line.strip() and not line.startswith("import ")]

begin = next(i for i, l in enumerate(test) if l.strip() == "// quick-start begin")
finish = next(i for i, l in enumerate(test) if l.strip() == "// quick-start end")
tested = [l[8:] if l.startswith("        ") else l.strip() for l in test[begin + 1:finish] if l.strip()]

if shown != tested:
    print("README quick start and QuickStartTests differ:", file=sys.stderr)
    for a, b in zip(shown + [""] * len(tested), tested + [""] * len(shown)):
        if a != b:
            print(f"  README: {a!r}\n  test:   {b!r}", file=sys.stderr)
    sys.exit(1)
print(f"ok: {len(shown)} lines")
