#!/usr/bin/env python3
"""Run one benchmark command (enet-many or bench/many); sample its child processes' CPU (utime+stime)
by affinity (CPU 0 = server, CPU 1 = clients) and CPU 1's busy share every
0.25 s; print the command's output and the clients' CPU over 1.0..4.5 s
before the command's exit (inside its 5 s measured window)."""
import os, subprocess, sys, time

TCK = os.sysconf("SC_CLK_TCK")


def kids(pid):
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def cpu_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        fl = s[s.rindex(")") + 2:].split()
        ticks = int(fl[11]) + int(fl[12])
        with open(f"/proc/{pid}/status") as f:
            aff = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list")][0]
        return ticks, aff
    except (OSError, IndexError, ValueError):
        return None


def cpu1():
    with open("/proc/stat") as f:
        for l in f:
            if l.startswith("cpu1 "):
                v = [int(x) for x in l.split()[1:9]]
                return sum(v) - v[3] - v[4], sum(v)
    return 0, 0


def main():
    cmd = sys.argv[1:]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.set_blocking(p.stdout.fileno(), False)
    samples, last, buf = [], {}, ""
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        for k in kids(p.pid):
            r = cpu_of(k)
            if r:
                last[k] = r
        cl = sum(t for t, a in last.values() if a == "1")
        sv = sum(t for t, a in last.values() if a == "0")
        samples.append((time.time(), cl, sv) + cpu1())
        try:
            buf += p.stdout.read() or ""
        except TypeError:
            pass
        time.sleep(0.25)
    if p.poll() is None:
        p.kill()
    buf += p.stdout.read() or ""
    end = time.time()
    sys.stdout.write(buf)
    a = [s for s in samples if s[0] <= end - 4.5]
    b = [s for s in samples if s[0] <= end - 1.0]
    if a and b and b[-1][0] > a[-1][0]:
        s0, s1 = a[-1], b[-1]
        dt = s1[0] - s0[0]
        print("sampled %.2f s: clients' CPU %.0f%% of a core, server %.0f%%, CPU 1 busy %.0f%%" % (
            dt, 100 * (s1[1] - s0[1]) / TCK / dt, 100 * (s1[2] - s0[2]) / TCK / dt,
            100 * (s1[3] - s0[3]) / max(1, s1[4] - s0[4])))
    sys.exit(p.returncode or 0)


main()
