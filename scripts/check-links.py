#!/usr/bin/env python3
"""Fails when a relative Markdown link in the repository points at a missing file or heading.

Run by `make check` and by `make test` (scripts/test.sh). Every Markdown file git knows of (tracked, or new and not
ignored) is read; in each, every inline link or image `[text](target)` outside code is checked:

  - a target with a scheme (https:, mailto:, ...) is left alone;
  - the path (relative to the file, or to the repository root when it starts with `/`) must exist;
  - an anchor (`#heading`, or `FILE.md#heading`) must name a heading of that Markdown file, by GitHub's rule: the
    heading's text without its Markdown, lower-cased, every character but letters, digits, spaces, `-` and `_`
    dropped, spaces turned into `-`, and `-1`, `-2`... added to repeats.

Prints one `error:` line per broken link (file:line, the target, what is missing) and exits 1; prints a count and
exits 0 when every link resolves. Usage: scripts/check-links.py [REPO_ROOT]
"""

import os
import re
import subprocess
import sys
import unicodedata

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files(root):
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"],
        cwd=root, check=True, capture_output=True).stdout.decode()
    return sorted({path for path in out.split("\0") if path and os.path.isfile(os.path.join(root, path))})


def prose_lines(text, blank_code=True):
    """(line number, line) of the lines outside fenced code blocks, with inline code spans blanked."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        match = FENCE.match(line)
        if match:
            if fence is None:
                fence = match.group(1)
            elif match.group(1) == fence:
                fence = None
            continue
        if fence is None and blank_code:
            yield number, re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)
        elif fence is None:
            yield number, line


def anchor(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*|_)(.+?)\1", r"\2", text)  # emphasis
    kept = []
    for char in text.lower():
        if char in " -_" or unicodedata.category(char)[0] in "LN":
            kept.append(char)
    return "".join(kept).replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, names = {}, set()
        with open(path, encoding="utf-8") as handle:
            for _, line in prose_lines(handle.read(), blank_code=False):
                match = HEADING.match(line)
                if not match:
                    continue
                name = anchor(match.group(2))
                count = seen.get(name, 0)
                seen[name] = count + 1
                names.add(name if count == 0 else f"{name}-{count}")
        cache[path] = names
    return cache[path]


def check(root):
    errors, links = [], 0
    for relative in markdown_files(root):
        source = os.path.join(root, relative)
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
        # Inline code was blanked, so a link inside backticks is not one.
        for number, line in prose_lines(text):
            for match in LINK.finditer(line):
                target = match.group(1)
                if SCHEME.match(target):
                    continue
                links += 1
                path, _, fragment = target.partition("#")
                if path:
                    base = root if path.startswith("/") else os.path.dirname(source)
                    resolved = os.path.normpath(os.path.join(base, path.lstrip("/")))
                else:
                    resolved = source
                where = f"{relative}:{number}"
                if not os.path.exists(resolved):
                    errors.append(f"error: {where}: broken link ({target}): no file {os.path.relpath(resolved, root)}")
                elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                    errors.append(
                        f"error: {where}: broken link ({target}): {os.path.relpath(resolved, root)} has no heading "
                        f"whose anchor is #{fragment}")
    return errors, links


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    errors, links = check(root)
    for error in errors:
        print(error)
    if errors:
        print(f"check-links: FAILED: {len(errors)} of {links} relative Markdown links are broken")
        return 1
    print(f"check-links: {links} relative Markdown links resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
