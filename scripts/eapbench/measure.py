"""CPU readings from /proc and the lab summary's groups."""
import os
import time

from .common import TICKS, log


def find_group(obj, name):
    """The lab summary's result of group `name` (wherever the report nests it)."""
    if isinstance(obj, dict):
        if obj.get("name") == name and "series" in obj:
            return obj
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            g = find_group(v, name)
            if g is not None:
                return g
    return None


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return 1000.0 * xs[min(len(xs) - 1, max(0, int(round(q / 100.0 * len(xs) + 0.5)) - 1))]


def proc_cpu(pid):
    """utime + stime of a process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def proc_stats():
    """(pid, comm, the fields after comm) of every process that is still there."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        yield int(entry), stat[stat.find("(") + 1:stat.rfind(")")], stat.rsplit(")", 1)[1].split()


def all_cpu():
    """comm and utime+stime (seconds) of every process."""
    return {pid: (name, (int(fields[11]) + int(fields[12])) / TICKS)
            for pid, name, fields in proc_stats()}


def top_users(a, b, n=6):
    by_name = {}
    for pid, (name, t1) in b.items():
        if pid in a and a[pid][0] == name:
            by_name[name] = by_name.get(name, 0.0) + t1 - a[pid][1]
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:n]
    return {k: round(v, 2) for k, v in top if v > 0.05}


def machine_busy():
    """(busy, niced) CPU seconds of the whole machine since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / TICKS, v[1] / TICKS


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system + t.user + t.system


def settle(pid, limit=20.0):
    """Wait until the server is idle (work left over from the last cell ends first)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        a = proc_cpu(pid)
        time.sleep(0.5)
        if proc_cpu(pid) - a < 0.03:
            return
    log("server still busy after the settle limit; going on")
