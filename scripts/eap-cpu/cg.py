#!/usr/bin/env python3
"""Issue 25: user-space instructions (callgrind) of `portcullis serve` per login and per
bare round trip, the figure a busy machine does not blur.
  scripts/eap-cpu/cg.py BIN NAME   (BIN runs under valgrind --tool=callgrind for `serve`
  only; dumps go to lab-out/eap-cpu-cg/NAME)
Valgrind hides SHA-NI and ADX, so over TLS 1.3 the server picks SHA-384 (the SHA-256 suites
go first only on SHA-256 hardware) and aws-lc runs its generic X25519: those counts overstate
what the CPU runs natively.
Phases (each between callgrind_control -z and -d): 60 Status-Server round trips; 6 full
EAP-TLS logins (eapol_test -r 0); one eapol_test -r 20 (1 full + 20 resumed); for TLS 1.2 and 1.3.
"""
import glob, hashlib, hmac, os, re, shutil, socket, struct, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import eapbench as eb  # noqa: E402 (scripts/eapbench, beside scripts/eap-bench)


real, name = sys.argv[1], sys.argv[2]
outdir = os.path.abspath(f"lab-out/eap-cpu-cg/{name}")
shutil.rmtree(outdir, ignore_errors=True)
os.makedirs(outdir)
wrapper = os.path.join(outdir, "wrap.sh")
with open(wrapper, "w") as f:
    f.write(f"""#!/bin/sh
if [ "$1" = serve ]; then exec valgrind --tool=callgrind --dump-instr=no --collect-atstart=yes --callgrind-out-file={outdir}/cg.%p.out {real} "$@"; fi
exec {real} "$@"
""")
os.chmod(wrapper, 0o755)
eb.common.BIN = wrapper
eb.START_TIMEOUT = 600

work = tempfile.mkdtemp(prefix="h25cg-")
users = [("eap-user-0", "pw-0-xyz")]
pki = eb.make_pki(os.path.join(work, "pki"), [u for u, _ in users])
confs = eb.Confs(os.path.join(work, "eapol"), pki)
port = eb.free_udp_port()
secret = "cg-secret-123"
proc, pid, *_ = eb.start_portcullis(work, pki, users, secret, port, 1000)
time.sleep(3)


def ctl(flag):
    subprocess.run(["callgrind_control", flag, str(pid)], capture_output=True, check=True)


def totals():
    files = sorted(glob.glob(f"{outdir}/cg.{pid}.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    txt = open(files[-1]).read()
    m = re.search(r"^(?:totals|summary): (\d+)", txt, re.M)
    return int(m.group(1))


def status_server(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(30)
    for i in range(n):
        auth = os.urandom(16)
        attrs = bytes([80, 18]) + bytes(16)
        length = 20 + len(attrs)
        pkt = bytes([12, i % 256]) + struct.pack(">H", length) + auth + attrs
        mac = hmac.new(secret.encode(), pkt, hashlib.md5).digest()
        pkt = pkt[:22] + mac
        s.sendto(pkt, ("127.0.0.1", port))
        s.recv(4096)


def eapol(tls, r):
    conf = confs.get("tls", users[0][0], users[0][1], tls)
    cmd = eb.eapol_cmd(conf, port, secret, r, eb.mac(0xcc, 1), timeout=120)
    out = eb.run_once(cmd, 600)
    assert out["success"], out
    return out


def phase(label, fn, per):
    ctl("-z")
    extra = fn()
    ctl("-d")
    time.sleep(1)
    ir = totals()
    print(f"{name} {label}: {ir} Ir total, {ir / per:.0f} per unit ({per}) {extra or ''}", flush=True)
    return ir


try:
    status_server(20)  # warm
    eapol("1.2", 0); eapol("1.3", 0)
    res = {}
    res["status"] = phase("status-server x60", lambda: status_server(60), 60)
    for tls in ("1.2", "1.3"):
        full = phase(f"tls{tls} full x6", lambda: [eapol(tls, 0) for _ in range(6)] and None, 6)
        def resumed():
            o = eapol(tls, 20)
            return f"logins {len(o['logins'])} resumed {o['resumed']}"
        r = phase(f"tls{tls} -r 20", resumed, 21)
        print(f"{name} tls{tls}: full {full / 6:.0f}, resumed {(r - full / 6) / 20:.0f} per login,"
              f" ratio {((r - full / 6) / 20) / (full / 6):.3f}", flush=True)
finally:
    eb.stop(proc)
    shutil.rmtree(work, ignore_errors=True)
