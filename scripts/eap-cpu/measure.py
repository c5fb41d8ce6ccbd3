#!/usr/bin/env python3
"""Issue 25: per-login server CPU (user/system from /proc), context switches, for
EAP-TLS full and resumed over TLS 1.2 and 1.3, driven by `portcullis lab run` (the
eap-bench lab cells' scenario). Reuses scripts/eap-bench's PKI, server start and scenario.

  scripts/eap-cpu/measure.py --bin PATH[,PATH2...] [--seconds S] [--loops K] [--rounds R]
Binaries are interleaved per round. K stations in closed loops keep the server busy (it
rarely sleeps between round trips); eapol_test through epace.py is the paced case.
Syscalls and context switches per login come from `perf stat -p` over the window.
"""
import argparse, json, os, subprocess, sys, tempfile, time, glob, shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import eapbench as eb  # noqa: E402 (scripts/eapbench, beside scripts/eap-bench)


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return int(v[11]) / eb.TICKS, int(v[12]) / eb.TICKS


def ctx(pid):
    vol = inv = 0
    for st in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            for line in open(st):
                if line.startswith("voluntary_ctxt_switches"):
                    vol += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"):
                    inv += int(line.split()[1])
        except OSError:
            pass
    return vol, inv


def run_cell(bin_, work, port, secret, pki, users, tls, method, resume, seconds, loops, pid):
    cell = eb.LabCell(method, resume, seconds, loops)
    scen = cell.scenario(work, port, secret, pki, users, tls)
    out = os.path.join(work, f"out-{method}-{resume}-{tls}-{time.monotonic_ns()}")
    proc = subprocess.Popen([bin_, "lab", "run", scen, "--out", out, "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    begun = time.monotonic()
    time.sleep(cell.START)
    u0, s0 = cpu(pid); x0 = ctx(pid); t0 = time.monotonic()
    ps = subprocess.run(["perf", "stat", "-x,", "-p", str(pid), "-e",
                         "raw_syscalls:sys_enter,context-switches,cpu-migrations,task-clock",
                         "--", "sleep", str(seconds)], capture_output=True, text=True)
    u1, s1 = cpu(pid); x1 = ctx(pid); t1 = time.monotonic()
    perf = {}
    for line in ps.stderr.splitlines():
        f = line.split(",")
        if len(f) > 3 and f[0].replace(".", "").isdigit():
            perf[f[2]] = float(f[0])
    _, err = proc.communicate(timeout=120)
    summary = json.load(open(os.path.join(out, "summary.json")))
    g = eb.find_group(summary, "stations")
    lo, hi = t0 - begun, t1 - begun
    acc = sum(r["outcomes"].get("success", 0) for r in g["series"]
              if lo <= r["second"] and r["second"] + 1 <= hi + 0.5)
    secs = sum(1 for r in g["series"] if lo <= r["second"] and r["second"] + 1 <= hi + 0.5)
    n = acc / secs * (t1 - t0) if secs else 0
    eap = g.get("eap") or {}
    return {"logins": n, "rate": acc / secs if secs else 0, "user_ms": 1000 * (u1 - u0) / n if n else None,
            "sys_ms": 1000 * (s1 - s0) / n if n else None,
            "cpu_ms": 1000 * (u1 - u0 + s1 - s0) / n if n else None,
            "syscalls": perf.get("raw_syscalls:sys_enter", 0) / n if n else None,
            "cs": perf.get("context-switches", 0) / n if n else None,
            "task_clock_ms": perf.get("task-clock", 0) / n if n else None,
            "vcs": (x1[0] - x0[0]) / n if n else None, "ivcs": (x1[1] - x0[1]) / n if n else None,
            "eap": {k: v for k, v in eap.items() if not isinstance(v, (list, dict))},
            "outcomes": g.get("outcomes"), "load": open("/proc/loadavg").read().split()[:3]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--loops", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tls", default="1.2,1.3")
    ap.add_argument("--cells", default="full,resumed")
    ap.add_argument("--out", default="lab-out/eap-cpu-lab.jsonl")
    a = ap.parse_args()
    bins = a.bin.split(",")
    work = tempfile.mkdtemp(prefix="h25-")
    users = [(f"eap-user-{i}", f"pw-{i}-xyz") for i in range(max(4, a.loops))]
    pki = eb.make_pki(os.path.join(work, "pki"), [u for u, _ in users])
    servers = {}
    try:
        for b in bins:
            w = os.path.join(work, os.path.basename(b) + str(len(servers)))
            os.makedirs(w)
            port = eb.free_udp_port()
            secret = "s3cret-" + str(port)
            eb.common.BIN = b
            proc, pid, ver, cmd, http = eb.start_portcullis(w, pki, users, secret, port, 1000)
            servers[b] = (proc, pid, port, secret, w)
            eb.log(f"{b}: pid {pid} port {port}")
        for r in range(a.rounds):
            for tls in a.tls.split(","):
                for cell in a.cells.split(","):
                    for b in bins:
                        proc, pid, port, secret, w = servers[b]
                        eb.settle(pid)
                        res = run_cell(b, w, port, secret, pki, users, tls, "tls", cell == "resumed",
                                       a.seconds, a.loops, pid)
                        res.update({"bin": b, "tls": tls, "cell": cell, "round": r,
                                    "time": time.strftime("%H:%M:%S")})
                        print(json.dumps(res), flush=True)
                        with open(a.out, "a") as f:
                            f.write(json.dumps(res) + "\n")
    finally:
        for proc, *_ in servers.values():
            eb.stop(proc)
        shutil.rmtree(work, ignore_errors=True)


main()
