#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs 'wsnap check' over the malformed corpus (tests/e2e/e2e_corpus.sh).

    run_corpus.py WSNAP CORPUS_DIR MAX_RSS_KIB [REGEX]

For every line of CORPUS_DIR/EXPECTED (see make_malformed.py) whose file
name matches REGEX: 'wsnap check OPTIONS FILE' and 'wsnap check OPTIONS -'
with the file fed through a pipe. Each run must give the exit code and the
exact first stderr line of the manifest (further stderr lines must be
'wsnap: hint:' lines, stdout must be empty) and stay under MAX_RSS_KIB of
peak resident memory, measured per run with wait4(2). Exits 1 on any
failure. One process drives every run, so the cost is wsnap's, not a
Python start-up per run.
"""

import os
import re
import sys
import tempfile
import threading

TIMEOUT = 300


def run(argv, feed):
    """argv with stdin from /dev/null or a pipe fed with the bytes feed;
    returns (exit code, stdout, stderr, peak RSS KiB)"""
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    r = w = None
    if feed is not None:
        r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if r is not None:
                os.dup2(r, 0)
                os.close(w)
            else:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    feeder = None
    if r is not None:
        os.close(r)

        def write_all():
            try:
                view = memoryview(feed)
                while view:
                    n = os.write(w, view[:1 << 20])
                    view = view[n:]
            except OSError:
                pass  # wsnap stopped reading: it has decided
            finally:
                os.close(w)

        feeder = threading.Thread(target=write_all)
        feeder.start()
    timer = threading.Timer(TIMEOUT, lambda: os.kill(pid, 9))
    timer.start()
    _, status, ru = os.wait4(pid, 0)
    timer.cancel()
    if feeder:
        feeder.join()
    if os.WIFSIGNALED(status):
        rc = 128 + os.WTERMSIG(status)
    else:
        rc = os.WEXITSTATUS(status)
    out.seek(0)
    err.seek(0)
    return rc, out.read(), err.read(), ru.ru_maxrss


def main():
    if len(sys.argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    wsnap, corpus, max_kib = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pattern = re.compile(sys.argv[4] if len(sys.argv) > 4 else ".")
    fails = runs = lines = 0
    worst = (0, "")
    with open(os.path.join(corpus, "EXPECTED"), encoding="utf-8") as f:
        manifest = [ln.rstrip("\n").split("\t") for ln in f
                    if ln.strip() and not ln.startswith("#")]
    for name, rc, opts, msg in manifest:
        if not pattern.search(name):
            continue
        lines += 1
        path = os.path.join(corpus, name)
        args = [] if opts == "-" else opts.split(" ")
        with open(path, "rb") as fh:
            data = fh.read()
        for mode in ("file", "pipe"):
            argv = [wsnap, "check"] + args + ([path] if mode == "file"
                                              else ["-"])
            got_rc, out, err, kib = run(argv, data if mode == "pipe"
                                        else None)
            runs += 1
            errs = err.decode("utf-8", "surrogateescape").split("\n")
            problems = []
            if got_rc != int(rc):
                problems.append("exit %d, want %s; stderr: %s" % (
                    got_rc, rc, errs[0][:300]))
            else:
                if out:
                    problems.append("stdout: %r" % out[:200])
                if msg == "-":
                    if err:
                        problems.append("stderr: %s" % errs[0][:300])
                elif errs[0] != msg:
                    problems.append("stderr '%s', want '%s'" % (
                        errs[0][:300], msg[:300]))
                extra = [e for e in errs[1:]
                         if e and not e.startswith("wsnap: hint: ")]
                if extra:
                    problems.append("extra stderr: %s" % extra[0][:200])
            if kib > max_kib:
                problems.append("peak RSS %d KiB > %d KiB" % (kib, max_kib))
            if kib > worst[0]:
                worst = (kib, "%s (%s)" % (name, mode))
            for p in problems:
                print("FAIL: %s (%s): %s" % (name, mode, p))
            fails += bool(problems)
    if lines == 0:
        print("FAIL: no corpus entries")
        return 1
    print("e2e_corpus: %d runs over %d archives, %d failures; peak RSS "
          "%d KiB (%s)" % (runs, lines, fails, worst[0], worst[1]))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
