#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Timing helper for bench/run.sh: runs one command once and reports.

  measure.py [--timeout S] [--ok CODES] [--stdout FILE] -- CMD ARGS...
  measure.py --daemons PATH

Prints exactly one line:
  ok WALL_S MAXRSS_KIB RC      the command exited with a code in CODES
  over S                       it ran longer than S seconds (its whole
                               process group was killed)
  fail RC FIRST-STDERR-LINE    any other exit (RC is -N for signal N)

WALL_S is measured from just before the fork to the return of wait4().
MAXRSS_KIB is the command's ru_maxrss, which on Linux is the largest
resident set of the command and of every descendant it waited for (so a
pipeline under `bash -c` reports its largest member). It is taken by GNU
time (/usr/bin/time, about 1 ms and 1 MiB of its own), because a process
forked from this Python inherits Python's high-water mark (about 14 MiB)
into its ru_maxrss; without GNU time that inflated figure is reported. Daemons that detach (FUSE
mounts) are not included: `--daemons PATH` finds them instead, as the
processes with an argument equal to PATH or under PATH/ (each mount of
run.sh has a path of its own), and prints "PIDS... HWM_KIB" (the sum of
their VmHWM, the kernel's peak resident set of each) or "none".
"""
import os
import signal
import subprocess
import sys
import tempfile
import time


GNU_TIME = "/usr/bin/time"


class Timeout(Exception):
    pass


class Interrupted(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def on_signal(signum, frame):
    raise Interrupted(signum)


def daemons(path):
    path = path.rstrip("/")
    me = {os.getpid(), os.getppid()}
    pids = []
    hwm = 0
    for ent in os.listdir("/proc"):
        if not ent.isdigit() or int(ent) in me:
            continue
        try:
            with open("/proc/%s/cmdline" % ent, "rb") as f:
                args = f.read().split(b"\0")
            if not any(a.decode("utf-8", "replace") == path or
                       a.decode("utf-8", "replace").startswith(path + "/")
                       for a in args):
                continue
            with open("/proc/%s/status" % ent) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm += int(line.split()[1])
                        pids.append(ent)
        except (OSError, ValueError):
            continue
    print(" ".join(pids + [str(hwm)]) if pids else "none")
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "--daemons":
        return daemons(argv[1])
    timeout = 0.0
    ok = {0}
    out = os.devnull
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--timeout":
            timeout = float(argv[i + 1])
        elif argv[i] == "--ok":
            ok = {int(c) for c in argv[i + 1].replace(",", " ").split()}
        elif argv[i] == "--stdout":
            out = argv[i + 1]
        else:
            print("fail 2 measure.py: bad option %s" % argv[i])
            return 2
        i += 2
    cmd = argv[i + 1:]
    if not cmd:
        print("fail 2 measure.py: no command")
        return 2
    err = tempfile.TemporaryFile()
    rss = None
    if os.access(GNU_TIME, os.X_OK):
        rss = tempfile.NamedTemporaryFile(prefix="measure-rss-")
        cmd = [GNU_TIME, "-q", "-f", "%M", "-o", rss.name, "--"] + cmd
    signal.signal(signal.SIGALRM, on_alarm)
    # The command runs in a session of its own (a terminal's Ctrl-C does not
    # reach it), so an interrupted measure takes its command down itself.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    with open(out, "wb") as stdout:
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                    stdout=stdout, stderr=err,
                                    start_new_session=True)
        except OSError as e:
            print("fail 127 %s: %s" % (cmd[0], e.strerror))
            return 0
        if timeout > 0:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            _, status, ru = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            signal.setitimer(signal.ITIMER_REAL, 0)
        except (Timeout, Interrupted) as e:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            if isinstance(e, Interrupted):
                print("fail -%d interrupted" % e.args[0])
                return 128 + e.args[0]
            print("over %g" % timeout)
            return 0
    rc = os.waitstatus_to_exitcode(status)
    proc.returncode = rc
    maxrss = ru.ru_maxrss
    if rss is not None:
        lines = open(rss.name).read().split()
        if lines and lines[-1].isdigit():
            maxrss = int(lines[-1])
        if rc > 128:  # GNU time reports a signal as 128 + N
            rc = 128 - rc
    if rc in ok:
        print("ok %.6f %d %d" % (wall, maxrss, rc))
        return 0
    err.seek(0)
    lines = [l.strip() for l in err.read(4096).decode("utf-8", "replace")
             .splitlines() if l.strip()]
    msg = lines[0] if lines else "no message"
    print("fail %d %s" % (rc, " ".join(msg.split())[:100]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
