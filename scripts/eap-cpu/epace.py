#!/usr/bin/env python3
"""Issue 25: server CPU per login with eapol_test as the supplicant (the server idles between
round trips, as with real NASes): schedstat (ns) of every server thread, utime/stime,
context switches, syscalls (perf stat). Binaries interleaved per TLS version and round.
  scripts/eap-cpu/epace.py BIN1,BIN2[,freeradius[-cache]] [--full N] [--reauth R] [--par P]
                           [--rounds K] [--tls 1.2,1.3]
Full logins: N eapol_test -r 0 runs in P loops. Resumed: P eapol_test -r R runs, their
first (full) logins taken off at the full phase's CPU per login. CPU is the sum of the
server threads' schedstat run time (nanoseconds; utime/stime tick at 10 ms and are shown
for the user/system split only). FreeRADIUS (scripts/freeradius-eap) does not resume as
shipped: its "resumed" figure is full handshakes."""
import argparse, glob, json, os, signal, subprocess, sys, tempfile, threading, time, shutil
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import eapbench as eb  # noqa: E402 (scripts/eapbench, beside scripts/eap-bench)

def sched(pid):
    t = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try: t += int(open(f).read().split()[0])
        except OSError: pass
    return t / 1e6  # ms

def ut(pid):
    v = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(v[11]) * 1000 / eb.TICKS, int(v[12]) * 1000 / eb.TICKS

def ctx(pid):
    n = 0
    for st in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            for line in open(st):
                if "ctxt_switches" in line: n += int(line.split()[1])
        except OSError: pass
    return n

def measure(pid, fn):
    perf = subprocess.Popen(["perf", "stat", "-x,", "-p", str(pid), "-e", "raw_syscalls:sys_enter"],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    s0, (u0, y0), c0 = sched(pid), ut(pid), ctx(pid)
    extra = fn()
    s1, (u1, y1), c1 = sched(pid), ut(pid), ctx(pid)
    perf.send_signal(signal.SIGINT); err = perf.communicate()[1]
    sc = 0
    for line in err.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] == "raw_syscalls:sys_enter": sc = float(f[0])
    return {"sched_ms": s1 - s0, "user_ms": u1 - u0, "sys_ms": y1 - y0, "cs": c1 - c0, "syscalls": sc, "extra": extra}

ap = argparse.ArgumentParser()
ap.add_argument("bins"); ap.add_argument("--full", type=int, default=24); ap.add_argument("--reauth", type=int, default=100)
ap.add_argument("--par", type=int, default=2); ap.add_argument("--rounds", type=int, default=2); ap.add_argument("--tls", default="1.2,1.3")
ap.add_argument("--out", default="lab-out/eap-cpu-paced.jsonl")
a = ap.parse_args()
work = tempfile.mkdtemp(prefix="h25pace-")
users = [(f"eap-user-{i}", f"pw-{i}-xyz") for i in range(a.par)]
pki = eb.make_pki(os.path.join(work, "pki"), [u for u, _ in users])
confs = eb.Confs(os.path.join(work, "eapol"), pki)
servers = {}
try:
    for b in a.bins.split(","):
        w = os.path.join(work, str(len(servers))); os.makedirs(w)
        port = eb.free_udp_port(); secret = f"pace-{port}"
        if b.startswith("freeradius"):
            proc, pid, *_ = eb.start_freeradius(w, pki, users, secret, port, 1000, b.endswith("cache"))
        else:
            eb.common.BIN = b
            proc, pid, *_ = eb.start_portcullis(w, pki, users, secret, port, 1000)
        servers[b] = (proc, pid, port, secret)
    def run_par(b, tls, reauths, count):
        proc, pid, port, secret = servers[b]
        res = {"ok": 0, "resumed": 0, "bad": 0}
        lock = threading.Lock()
        def loop(i):
            conf = confs.get("tls", users[i][0], users[i][1], tls)
            for _ in range(count):
                o = eb.run_once(eb.eapol_cmd(conf, port, secret, reauths, eb.mac(0xcc, i + 1)), 300)
                with lock:
                    if o["success"]:
                        res["ok"] += len(o["logins"]); res["resumed"] += o["resumed"]
                    else: res["bad"] += 1
        th = [threading.Thread(target=loop, args=(i,)) for i in range(a.par)]
        [t.start() for t in th]; [t.join() for t in th]
        return res
    for r in range(a.rounds):
        for tls in a.tls.split(","):
            for b in servers:
                pid = servers[b][1]
                eb.settle(pid)
                full = measure(pid, lambda: run_par(b, tls, 0, a.full // a.par))
                eb.settle(pid)
                resu = measure(pid, lambda: run_par(b, tls, a.reauth, 1))
                nf = full["extra"]["ok"]; fper = full["sched_ms"] / nf
                nr = resu["extra"]["resumed"]; nfull_in_r = resu["extra"]["ok"] - nr
                rper = (resu["sched_ms"] - nfull_in_r * fper) / nr if nr else resu["sched_ms"] / max(1, resu["extra"]["ok"])
                out = {"bin": b, "tls": tls, "round": r, "full_ms": fper, "resumed_ms": rper, "ratio": rper / fper, "n_ok_r": resu["extra"]["ok"],
                       "full_user_ms": full["user_ms"] / nf, "full_sys_ms": full["sys_ms"] / nf,
                       "res_user_ms": resu["user_ms"] / (nr + nfull_in_r), "res_sys_ms": resu["sys_ms"] / (nr + nfull_in_r),
                       "full_cs": full["cs"] / nf, "res_cs": resu["cs"] / (nr + nfull_in_r),
                       "full_syscalls": full["syscalls"] / nf, "res_syscalls": resu["syscalls"] / (nr + nfull_in_r),
                       "n_full": nf, "n_res": nr, "bad": full["extra"]["bad"] + resu["extra"]["bad"],
                       "load": open("/proc/loadavg").read().split()[:3], "time": time.strftime("%H:%M:%S")}
                print(json.dumps(out), flush=True)
                with open(a.out, "a") as f: f.write(json.dumps(out) + "\n")
finally:
    for proc, *_ in servers.values(): eb.stop(proc)
    shutil.rmtree(work, ignore_errors=True)
