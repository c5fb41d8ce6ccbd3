"""The eapol_test-driven cells: `Cell` (logins from many eapol_test loops) and
`ControlCell` (the same traffic shape as bare Status-Server round trips)."""
import os
import secrets
import socket
import subprocess
import threading
import time

from .common import DRAIN, HOST, WARMUP
from .measure import all_cpu, children_cpu, machine_busy, pct, proc_cpu, top_users


class Cell:
    """K loops of eapol_test for a fixed window; events timestamped as the output arrives.

    The window opens once every legitimate loop has logged in once (at most WARMUP s), so
    neither the ramp nor, in the `-r` cells, the full login each process starts with is in
    it. When it closes no new exchange starts and the logins in flight finish (at most
    DRAIN s). Each login counts for the share of its duration that lies in the window, so
    a slow server whose logins run in step (16 PBKDF2 logins finishing together) is not
    counted in bursts of 16; its CPU is measured over the same window."""

    def __init__(self, name, duration):
        self.name, self.duration = name, duration
        self.lock = threading.Lock()
        self.closing = threading.Event()  # window closed: no new exchange
        self.t1 = None
        self.stop = threading.Event()  # drained (or gave up): stop everything
        self.procs = set()
        self.ours = set()  # processes this cell terminated
        self.logins = []  # (start, end, resumed)
        self.warm = set()  # loops that have logged in at least once
        self.failures = 0
        self.mppe_mismatch = 0
        self.processes = 0
        self.attempts = 0  # attacker exchanges finished (all must fail)
        self.attacker_accepts = 0
        self.versions = set()

    def _spawn(self, cmd, **kw):
        with self.lock:
            if self.closing.is_set():
                return None
            p = subprocess.Popen(cmd, **kw)
            self.procs.add(p)
            return p

    def _done(self, p):
        with self.lock:
            self.procs.discard(p)

    def _end(self, p):
        with self.lock:
            self.ours.add(p)
        try:
            p.terminate()  # eapol_test prints its MPPE tally on SIGTERM
        except ProcessLookupError:
            pass

    def legit_loop(self, i, cmd):
        """Line-buffered output read in chunks; the markers are timestamped on arrival."""
        while not self.closing.is_set():
            start = time.monotonic()
            p = self._spawn(["stdbuf", "-oL", *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
            if p is None:
                return
            fd = p.stdout.fileno()
            pending, seg_start, resumed, tail, seen = b"", start, False, [], 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                now = time.monotonic()
                pending += chunk
                cut = pending.rfind(b"\n")
                if cut < 0:
                    continue
                done, pending = pending[:cut + 1], pending[cut + 1:]
                for line in done.split(b"\n"):
                    if b"Handshake finished - resumed=1" in line:
                        resumed = True
                    elif b"CTRL-EVENT-EAP-SUCCESS" in line:
                        with self.lock:
                            self.logins.append((seg_start, now, resumed))
                            self.warm.add(i)
                        resumed, seen = False, seen + 1
                        if self.closing.is_set():
                            self._end(p)  # its login in flight is done
                    elif b"Triggering EAP reauthentication" in line:
                        seg_start, resumed = now, False
                        if self.closing.is_set():
                            self._end(p)  # this one would start after the window
                    elif (line.startswith(b"MPPE keys OK:") or line.startswith(b"SSL: Using TLS")
                          or line in (b"SUCCESS", b"FAILURE")):
                        tail.append(line)
            p.stdout.close()
            rc = p.wait()
            self._done(p)
            mppe = next((l for l in tail if l.startswith(b"MPPE keys OK:")), b"")
            with self.lock:
                ours = p in self.ours
                for l in tail:
                    if l.startswith(b"SSL: Using TLS version"):
                        self.versions.add(l.split(b"version", 1)[1].strip().decode())
                # "MPPE keys OK: n  mismatch: m"; eapol_test also counts an exchange that
                # failed or was stopped half-way as a mismatch, so a mismatch here is fewer
                # OKs than successful logins (failures are counted apart).
                ok_n = mppe.split(b":")[1].split()[0] if mppe.count(b":") >= 2 else b"0"
                if mppe and int(ok_n) < seen:
                    self.mppe_mismatch += 1
                if ours or self.stop.is_set():
                    continue  # ended by the cell: its verdict is not its own
                self.processes += 1
                if rc != 0 or b"SUCCESS" not in tail:
                    self.failures += 1

    def attacker_loop(self, cmd):
        """A guessing station: output discarded, only the outcome counted. It goes on
        until the legitimate logins in flight at the window's end are done."""
        while True:
            with self.lock:
                if self.stop.is_set():
                    return
                p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                self.procs.add(p)
            rc = p.wait()
            self._done(p)
            if self.stop.is_set():
                return
            with self.lock:
                self.attempts += 1
                if rc == 0:
                    self.attacker_accepts += 1  # must never happen: a wrong password let in

    def run(self, legit_cmds, attacker_cmds, server_pid):
        legit = [threading.Thread(target=self.legit_loop, args=(i, c), daemon=True)
                 for i, c in enumerate(legit_cmds)]
        attackers = [threading.Thread(target=self.attacker_loop, args=(c,), daemon=True)
                     for c in attacker_cmds]
        begun = time.monotonic()
        for t in legit + attackers:
            t.start()
        while time.monotonic() - begun < WARMUP:
            with self.lock:
                if len(self.warm) == len(legit_cmds):
                    break
            time.sleep(0.05)
        cpu0, mach0, kids0 = proc_cpu(server_pid), machine_busy(), children_cpu()
        snap0 = all_cpu()
        t0 = time.monotonic()
        time.sleep(self.duration)
        t1 = time.monotonic()
        cpu1, mach1 = proc_cpu(server_pid), machine_busy()
        snap1 = all_cpu()
        with self.lock:
            self.t1 = t1
            self.closing.set()
        # Processes waiting out eapol_test's pause between reauthentications stop at their
        # next "Triggering" line; the others finish the login in flight.
        for t in legit:
            t.join(timeout=max(0.1, t1 + DRAIN - time.monotonic()))
        drained = all(not t.is_alive() for t in legit)
        with self.lock:
            self.stop.set()
            procs = list(self.procs)
        for p in procs:
            self._end(p)
        deadline = time.monotonic() + 3
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
        for t in legit + attackers:
            t.join(timeout=30)
        kids1 = children_cpu()
        window = t1 - t0

        def share(s, e):
            if e <= s:
                return 1.0 if t0 <= e <= t1 else 0.0
            return max(0.0, min(e, t1) - max(s, t0)) / (e - s)

        inside = [(share(s, e), e - s, r) for (s, e, r) in self.logins if share(s, e) > 0]
        full_units = sum(f for f, _, r in inside if not r)
        res_units = sum(f for f, _, r in inside if r)
        full_lat = [d for _, d, r in inside if not r]
        res_lat = [d for _, d, r in inside if r]
        server_cpu = cpu1 - cpu0
        return {
            "seconds": window,
            "warmup_s": t0 - begun,
            "drained": drained,
            "loops": len(legit_cmds),
            "loops_warm": len(self.warm),
            "attacker_loops": len(attacker_cmds),
            # Logins in the window, each counted for the share of it that lies inside.
            "full_logins": full_units,
            "resumed_logins": res_units,
            "logins_touching_window": len(inside),
            "full_per_s": full_units / window,
            "resumed_per_s": res_units / window,
            "logins_per_s": (full_units + res_units) / window,
            # Latencies of the logins that overlap the window.
            "full_p50_ms": pct(full_lat, 50), "full_p99_ms": pct(full_lat, 99),
            "resumed_p50_ms": pct(res_lat, 50), "resumed_p99_ms": pct(res_lat, 99),
            "all_p50_ms": pct(full_lat + res_lat, 50), "all_p99_ms": pct(full_lat + res_lat, 99),
            "server_cpu_s": server_cpu,
            # The machine's busy CPU during the window, and what was not the server's (the
            # eapol_test processes, this script, anything else running).
            "machine_busy_cpu_s": mach1[0] - mach0[0],
            "machine_capacity_cpu_s": window * (os.cpu_count() or 1),
            "other_cpu_s": (mach1[0] - mach0[0]) - server_cpu,
            # Niced processes (background work such as builds; this benchmark's own
            # processes only if it was started niced).
            "niced_cpu_s": mach1[1] - mach0[1],
            "load_generator_cpu_s_whole_cell": kids1 - kids0,
            "processes_finished": self.processes,
            "process_failures": self.failures,
            "mppe_mismatches": self.mppe_mismatch,
            "tls_versions_seen": sorted(self.versions),
            "attacker_attempts": self.attempts,
            "attacker_attempts_per_s": self.attempts / max(1e-9, time.monotonic() - begun),
            "attacker_accepts": self.attacker_accepts,
            # Who else used the CPU in the window (processes alive at both ends), so a busy
            # neighbour (a build, another benchmark) shows.
            "top_processes_cpu_s": top_users(snap0, snap1),
        }


class ControlCell:
    """The transport alone: the same traffic shape as a resumed cell, no credential work.

    K loops each send R back-to-back Status-Server requests (RFC 5997, with
    Message-Authenticator), then pause 100 ms as eapol_test pauses before a
    reauthentication, for the window. The server's CPU per answered round trip is what one
    EAP round trip costs it before any EAP or TLS work (receive, Message-Authenticator,
    duplicate cache, reply, send, and waking up for each datagram at this rate): a resumed
    login costs its round trips times this, plus what resumption itself spends."""

    def __init__(self, duration, secret, port, burst):
        self.duration, self.secret, self.port, self.burst = duration, secret, port, burst
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answered = 0
        self.lost = 0
        self.window = None  # (t0, t1)
        self.in_window = 0

    def request(self, ident):
        import hashlib
        import hmac
        auth = secrets.token_bytes(16)
        body = bytes([80, 18]) + bytes(16)
        pkt = bytes([12, ident]) + (20 + len(body)).to_bytes(2, "big") + auth + body
        mac = hmac.new(self.secret.encode(), pkt, hashlib.md5).digest()
        return pkt[:-16] + mac

    def loop(self, i):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1.0)
        s.connect((HOST, self.port))
        ident = 0
        while not self.stop.is_set():
            for _ in range(self.burst):
                ident = (ident + 1) & 0xff
                s.send(self.request(ident))
                try:
                    while True:
                        got = s.recv(4096)
                        if len(got) >= 2 and got[1] == ident:
                            break
                    with self.lock:
                        self.answered += 1
                        w = self.window
                        if w and w[0] <= time.monotonic() and w[1] is None:
                            self.in_window += 1
                except socket.timeout:
                    with self.lock:
                        self.lost += 1
            time.sleep(0.1)
        s.close()

    def run(self, loops, server_pid):
        threads = [threading.Thread(target=self.loop, args=(i,), daemon=True)
                   for i in range(loops)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # every loop under way
        cpu0, mach0 = proc_cpu(server_pid), machine_busy()
        with self.lock:
            self.window = (time.monotonic(), None)
        t0 = time.monotonic()
        time.sleep(self.duration)
        with self.lock:
            self.window = (self.window[0], time.monotonic())
            n = self.in_window
        t1 = time.monotonic()
        cpu1, mach1 = proc_cpu(server_pid), machine_busy()
        self.stop.set()
        for t in threads:
            t.join(timeout=3)
        server_cpu = cpu1 - cpu0
        return {
            "seconds": t1 - t0,
            "loops": loops,
            "burst": self.burst,
            "round_trips": n,
            "round_trips_per_s": n / (t1 - t0),
            "lost": self.lost,
            "server_cpu_s": server_cpu,
            "cpu_us_per_round_trip": 1e6 * server_cpu / n if n else None,
            "machine_busy_cpu_s": mach1[0] - mach0[0],
            "niced_cpu_s": mach1[1] - mach0[1],
        }
