#!/usr/bin/env python3
"""Runs the commands the README and the manual (docs/*.md) give users, as written.

    scripts/readme-test.py [--vecflow PATH] [--only TEXT] [--list] [--links-only] [FILE.md ...]

Every fenced block whose language is `sh` is a test: its lines run in order in one bash
(`set -eo pipefail`), from the repository's root, with `vecflow` on the PATH being the binary
just built (--vecflow, default target/release/vecflow), never an installed one. As root each
block runs in a mount namespace of its own with a fresh tmpfs on /run/vecflow, so blocks share
no API socket and none meets a daemon another left; `cargo install` installs into a directory of
the run's ($CARGO_INSTALL_ROOT), never ~/.cargo/bin. Files a block leaves at the top of the
repository are removed after it. The block's output must contain what its directive expects.

A directive is an HTML comment on the line just before the opening fence, with words as a
shell splits them:

    <!-- test: skip (why this block is illustration only) -->
    <!-- test: root daemon=examples/lab.yaml expect="Time to live exceeded" -->

    skip (REASON)       not run; reported by name with its reason
    root                needs root (and network namespaces): without root it is a SKIP,
                        and with CI=true a failure
    setup=COMMAND       runs first (before the daemon), in the same namespace; must succeed
    daemon=FILE         `vecflow run -c FILE` runs (on the default socket) while the block does;
                        the block starts once `vecflow ctl --wait` returns; afterwards the daemon
                        must exit 0 within 5 s of SIGTERM
    netns=NAME          the daemon runs in that network namespace (`ip netns exec NAME`), which
                        setup= creates
    append=PREFIX=>ARGS ARGS are added to every line starting with PREFIX (before its comment),
                        e.g. a --duration to a command that would run until Ctrl-C
    drop=PREFIX         lines starting with PREFIX are not run (named in the output)
    may-fail=PREFIX     lines starting with PREFIX may exit non-zero (ping with TTL 1)
    file=NAME:SOURCE    SOURCE (a fixture) is copied to NAME at the top of the repository first
    expect=TEXT         the block's output (stdout and stderr) contains TEXT; /REGEX/ for a
                        regular expression
    then=COMMAND        runs after the block, in the same namespace; must succeed
    cleanup=COMMAND     runs after the block whatever happened
    timeout=SECONDS     the block's limit (default 600)

Besides the blocks, every relative link ([text](path) or [text](path#anchor)) in these files
must name a file that exists, and its anchor a heading in it; and every inline `vecflow WORD`
must name a subcommand `vecflow --help` lists. --links-only checks just these (seconds, no root:
the contributor's `./test.sh` runs it with the debug binary) and runs no block.

Exit status 0 when everything passed (skips allowed unless CI=true), 1 otherwise.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CI = os.environ.get("CI", "") not in ("", "0", "false")
DIRECTIVE = re.compile(r"^<!--\s*test:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


class Block:
    """One ```sh block: where it is, its lines and its directive."""

    def __init__(self, path, line, lines, directive):
        self.path, self.line, self.lines = path, line, lines
        self.name = f"{path.relative_to(ROOT)}:{line}"
        self.skip = None
        self.root = False
        self.daemon = None
        self.netns = None
        self.setup = []
        self.append, self.drop, self.may_fail, self.files = [], [], [], []
        self.expect, self.then, self.cleanup = [], [], []
        self.timeout = 600
        self.parse(directive)

    def parse(self, directive):
        if directive is None:
            return
        if directive.startswith("skip"):
            self.skip = directive[4:].strip().strip("()") or "no reason given"
            return
        for word in shlex.split(directive):
            key, _, value = word.partition("=")
            if key == "root":
                self.root = True
            elif key == "daemon":
                self.daemon = value
            elif key == "netns":
                self.netns = value
            elif key == "setup":
                self.setup.append(value)
            elif key == "append":
                self.append.append(self.pair(word, "=>"))
            elif key == "file":
                self.files.append(self.pair(word, ":"))
            elif key == "drop":
                self.drop.append(value)
            elif key == "may-fail":
                self.may_fail.append(value)
            elif key == "expect":
                self.expect.append(value)
            elif key == "then":
                self.then.append(value)
            elif key == "cleanup":
                self.cleanup.append(value)
            elif key == "timeout":
                self.timeout = int(value)
            else:
                raise SystemExit(f"{self.name}: unknown directive word '{word}' (see scripts/readme-test.py)")

    def pair(self, word, sep):
        """(A, B) of a directive word KEY=A{sep}B."""
        value = word.partition("=")[2]
        if sep not in value:
            raise SystemExit(f"{self.name}: {word}: expected A{sep}B")
        return tuple(value.split(sep, 1))

    def script(self):
        """The block as it runs: appended arguments, dropped lines, lines allowed to fail."""
        out = []
        for line in self.lines:
            command, comment = split_comment(line)
            bare = command.strip()
            if any(bare.startswith(p) for p in self.drop):
                out.append(f"echo 'readme-test: not run here: {bare}'")
                continue
            for prefix, args in self.append:
                if bare.startswith(prefix):
                    command = f"{command.rstrip()} {args}"
            if any(bare.startswith(p) for p in self.may_fail):
                command = f"{command.rstrip()} || true"
            out.append(command + comment)
        return "\n".join(out) + "\n"


def split_comment(line):
    """(command, ' # comment') of a shell line; the comment starts at a `#` after blank space
    outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and i > 0 and line[i - 1] in " \t":
            j = i
            while j > 0 and line[j - 1] in " \t":
                j -= 1
            return line[:j], line[j:]
    return line, ""


def blocks_of(path):
    """The ```sh blocks of a Markdown file, with the directive just before each."""
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if lang != "sh":
            continue
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        d = DIRECTIVE.match(lines[prev].strip()) if prev >= 0 else None
        found.append(Block(path, start + 1, body, d.group(1) if d else None))
    return found


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_\[\]()]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    out, in_fence = set(), False
    for line in path.read_text().splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def check_links(path):
    """Dead relative links and anchors in `path`: a list of messages."""
    errors, in_fence = [], False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            where = f"{path.relative_to(ROOT)}:{n}"
            if not dest.exists():
                errors.append(f"{where}: dead link {target} (no {dest})")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                errors.append(f"{where}: dead anchor {target} (no such heading in {dest.relative_to(ROOT)})")
    return errors


def check_subcommands(path, subcommands):
    """Inline `vecflow WORD` naming no subcommand."""
    errors = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        for span in re.findall(r"`vecflow ([a-z][a-z-]*)", line):
            if span not in subcommands:
                errors.append(f"{path.relative_to(ROOT)}:{n}: `vecflow {span}`: no such subcommand")
    return errors


def subcommands_of(vecflow):
    help_text = subprocess.run([vecflow, "--help"], capture_output=True, text=True, check=True).stdout
    section = help_text.split("Commands:", 1)[1].split("Options:", 1)[0]
    return {line.split()[0] for line in section.splitlines() if line.strip()}


def run_block(block, bindir, log):
    """Runs one block; a list of failure messages (empty when it passed)."""
    for name, source in block.files:
        shutil.copyfile(ROOT / source, ROOT / name)
    before = {p.name for p in ROOT.iterdir()}
    body = block.script()
    # `cargo install` installs into a directory of the run's, not ~/.cargo/bin: a README test
    # leaves no binary behind that a later `vecflow` could find.
    cargo_root = shlex.quote(str(bindir / "cargo-install"))
    parts = [
        "set -eo pipefail",
        f"export PATH={shlex.quote(str(bindir))}:$PATH",
        f"export CARGO_INSTALL_ROOT={cargo_root}",
    ]
    if os.geteuid() == 0:
        parts.append("mount -t tmpfs -o mode=0755 vecflow-readme-test /run/vecflow")
    parts += block.setup
    if block.daemon:
        netns = f"ip netns exec {shlex.quote(block.netns)} " if block.netns else ""
        parts += [
            f"{netns}vecflow run -c {shlex.quote(block.daemon)} >{shlex.quote(str(log))}.daemon 2>&1 &",
            "readme_daemon=$!",
            "vecflow ctl --wait=30",
        ]
    # The block in a subshell with errexit of its own; its status is kept for the checks below.
    wrapper = "\n".join(parts) + "\nset +e\n(\nset -e\n" + body + ")\nstatus=$?\n"
    if block.daemon:
        wrapper += (
            "kill -TERM $readme_daemon\n"
            "for _ in $(seq 50); do kill -0 $readme_daemon 2>/dev/null || break; sleep 0.1; done\n"
            "if kill -0 $readme_daemon 2>/dev/null; then echo 'readme-test: the daemon did not stop within 5 s'; "
            "kill -KILL $readme_daemon; status=1; fi\n"
            "wait $readme_daemon || { echo \"readme-test: the daemon exited $?\"; status=1; }\n"
        )
    for then in block.then:
        wrapper += f"[ $status != 0 ] || {{ {then}; }} || {{ echo 'readme-test: failed: {then}'; status=1; }}\n"
    for cleanup in block.cleanup:
        wrapper += f"{cleanup} || true\n"
    wrapper += "exit $status\n"
    script = log.with_suffix(".sh")
    script.write_text(wrapper)
    command = ["bash", str(script)]
    if os.geteuid() == 0:
        os.makedirs("/run/vecflow", exist_ok=True)
        command = ["unshare", "--mount", "--propagation", "private"] + command
    started = time.monotonic()
    with open(log, "w") as out:
        try:
            proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            status = proc.wait(timeout=block.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            status = f"timed out after {block.timeout} s"
    # Whatever the block left running (a daemon in the background) goes with it.
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass
    for p in ROOT.iterdir():
        if p.name not in before and p.is_file():
            p.unlink()
    for name, _ in block.files:
        (ROOT / name).unlink(missing_ok=True)
    output = log.read_text(errors="replace")
    failures = []
    if status != 0:
        failures.append(f"exit status {status}")
    for want in block.expect:
        if want.startswith("/") and want.endswith("/") and len(want) > 1:
            if not re.search(want[1:-1], output):
                failures.append(f"output does not match {want}")
        elif want not in output:
            failures.append(f"output does not contain {want!r}")
    print(f"    ({time.monotonic() - started:.0f}s)")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--vecflow", type=Path, default=ROOT / "target/release/vecflow")
    ap.add_argument("--only", help="run only the blocks whose name or first line contains this")
    ap.add_argument("--list", action="store_true", help="list the blocks and what each will run")
    ap.add_argument("--links-only", action="store_true", help="check the links and subcommands; run no block")
    args = ap.parse_args()
    files = [f.resolve() for f in args.files] or [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    blocks = [b for f in files for b in blocks_of(f)]

    if args.list:
        for b in blocks:
            print(f"== {b.name}" + (f"  SKIP ({b.skip})" if b.skip else ""))
            if not b.skip:
                print(b.script(), end="")
        return 0

    vecflow = args.vecflow.resolve()
    if not os.access(vecflow, os.X_OK):
        print(f"readme-test: {vecflow} is not built (cargo build --release -p vecflow)")
        return 1
    errors = []
    subcommands = subcommands_of(vecflow)
    for f in files:
        errors += check_links(f) + check_subcommands(f, subcommands)
    for e in errors:
        print(f"FAILED {e}")
    if args.links_only:
        print(f"readme-test: links and subcommands of {len(files)} page(s), {len(errors)} failure(s); no block run")
        return 1 if errors else 0

    bindir = Path(tempfile.mkdtemp(prefix="vecflow-readme-"))
    (bindir / "vecflow").symlink_to(vecflow)
    logs = ROOT / "target/readme-test"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    passed, skipped = 0, []
    for n, b in enumerate(blocks):
        if args.only and args.only not in b.name and args.only not in (b.lines[0] if b.lines else ""):
            continue
        first = b.lines[0] if b.lines else ""
        if b.skip:
            skipped.append(f"{b.name} ({first}): {b.skip}")
            continue
        if b.root and os.geteuid() != 0:
            reason = f"{b.name} ({first}): needs root"
            if CI:
                errors.append(f"{reason}, and with CI=true that is a failure")
            else:
                skipped.append(reason)
            continue
        print(f"==> {b.name}: {first}", flush=True)
        log = logs / f"block-{n:02}.log"
        failures = run_block(b, bindir, log)
        if failures:
            print(f"FAILED {b.name}: {'; '.join(failures)}; its output ({log.relative_to(ROOT)}):")
            print("".join("    | " + l + "\n" for l in log.read_text(errors="replace").splitlines()[-40:]))
            errors.append(f"{b.name}: {'; '.join(failures)}")
        else:
            passed += 1
    shutil.rmtree(bindir, ignore_errors=True)
    print(f"\nreadme-test: {passed} block(s) passed, {len(errors)} failure(s), {len(skipped)} skipped")
    for s in skipped:
        print(f"SKIP {s}")
    for e in errors:
        print(f"FAILED {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
