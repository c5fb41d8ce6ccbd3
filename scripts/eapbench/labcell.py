"""`LabCell`: the rate cells driven by the lab's EAP driver (`portcullis lab run`)."""
import json
import os
import subprocess
import time
import zlib

from . import common
from .common import EXCHANGE_TIMEOUT, Failed, HOST
from .measure import all_cpu, find_group, machine_busy, proc_cpu, top_users
from .pki import SERVER_NAME
from .servers import OWN_GROUP, stop


class LabCell:
    """K stations of the lab's EAP driver in closed loops for the cell's duration (plus a
    5 s start, so each station's first login, and for the resumed cell its full
    handshake, falls before the window): `portcullis lab run` on a generated scenario.
    The lab's per-second series gives the accepted logins in the window; the server's CPU
    is read from /proc at the window's ends, as in the eapol_test cells."""

    START = 5.0

    def __init__(self, method, resume, duration, loops, attackers=0, guessed=()):
        self.method, self.resume, self.duration, self.loops = method, resume, duration, loops
        # Guessing stations and the users they guess (cycled).
        self.attackers, self.guessed = attackers, list(guessed)

    def seed(self, tls):
        """A seed per cell: the lab numbers its stations' MAC addresses in a block the
        seed picks, so a cell's stations are never devices an earlier cell's guessers used
        (a server holds a throttled guessing station's MAC for a while)."""
        # attack-lab shares ttls-full-lab's block: its legitimate stations come first
        # (1..K), the devices that logged in alone (trusted, as the eapol_test attack
        # cell's loops are); the guessers take K+1.. , which no earlier cell used.
        key = f"{self.method}-{self.resume}-{tls}".encode()
        return 2 + zlib.crc32(key) % 0xFFF0

    def scenario(self, work, port, secret, pki, users, tls):
        csv = os.path.join(work, "lab-users.csv")
        with open(csv, "w") as f:
            os.fchmod(f.fileno(), 0o600)
            rows = [users[i % len(users)] for i in range(self.loops)]
            # The guessers' rows follow (principal_offset = loops): the lab guesses a wrong
            # password of each.
            rows += [self.guessed[j % len(self.guessed)] for j in range(self.attackers)]
            for u, pw in rows:
                f.write(f"{u},{pw}\n")
        eap = f'versions = ["{tls}"], ca = "{pki["ca"]}", method = "{self.method}", ' \
              f'server_name = "{SERVER_NAME}", ' \
              f'resume = {"true" if self.resume else "false"}'
        if self.method == "tls":
            crt, key = pki["client"](users[0][0])
            eap += f', cert = "{crt}", key = "{key}"'
        total = self.START + self.duration
        path = os.path.join(work, f"lab-{self.method}-{tls}{'-attack' if self.attackers else ''}.toml")
        with open(path, "w") as f:
            f.write(f"""name = "eap-bench-lab"
description = "eap-bench rate cell"
[target]
url = "radius://{HOST}:{port}"
metrics = "off"
[driver]
kind = "radius"
secret = "{secret}"
retransmit_ms = 2000
retries = 2
[principals]
file = "{csv}"
[run]
duration = "{total:g}s"
seed = {self.seed(tls)}
timeout = "{EXCHANGE_TIMEOUT}s"
max_requests = 20000000
[[group]]
name = "stations"
credentials = "valid"
size = {self.loops}
model = "closed"
think = "0ms"
start = "0s"
duration = "{total:g}s"
sources = "127.0.40.1-127.0.40.{self.loops}"
eap = {{ {eap} }}
""")
            if self.attackers:
                guess = eap.replace(f'method = "{self.method}"', 'method = "ttls"') \
                    .replace("resume = true", "resume = false")
                f.write(f"""[[group]]
name = "guessers"
credentials = "wrong_secret"
size = {self.attackers}
principal_offset = {self.loops}
model = "closed"
think = "0ms"
start = "0s"
duration = "{total:g}s"
sources = "127.0.41.1-127.0.41.{self.attackers}"
honour_retry_after = false
eap = {{ {guess} }}
""")
        return path

    def run(self, work, port, secret, pki, users, tls, server_pid):
        scen = self.scenario(work, port, secret, pki, users, tls)
        out = os.path.join(work, f"lab-out-{self.method}-{self.resume}-{tls}-{self.attackers}")
        cmd = [common.BIN, "lab", "run", scen, "--out", out, "--quiet"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                **OWN_GROUP)
        begun = time.monotonic()
        time.sleep(self.START)
        c0, m0, snap0 = proc_cpu(server_pid), machine_busy(), all_cpu()
        t0 = time.monotonic()
        time.sleep(self.duration)
        c1, m1, snap1 = proc_cpu(server_pid), machine_busy(), all_cpu()
        t1 = time.monotonic()
        try:
            _, err = proc.communicate(timeout=EXCHANGE_TIMEOUT + 30)
        except subprocess.TimeoutExpired:
            stop(proc)
            err = "lab run did not end"
        try:
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
        except (OSError, ValueError) as e:
            raise Failed(f"lab run: no summary ({e}): {(err or '')[-500:]}") from None
        group = find_group(summary, "stations")
        if group is None:
            raise Failed("lab run: no group 'stations' in its summary")
        # Seconds of the lab's series inside the window (its second 0 is the run's start).
        lo, hi = t0 - begun, t1 - begun
        accepted = sum(r["outcomes"].get("success", 0) for r in group["series"]
                       if lo <= r["second"] and r["second"] + 1 <= hi + 0.5)
        secs = sum(1 for r in group["series"] if lo <= r["second"] and r["second"] + 1 <= hi + 0.5)
        eap = group.get("eap") or {}
        rate = accepted / secs if secs else 0.0
        window = t1 - t0
        n = rate * window
        extra = {}
        if self.attackers:
            g = find_group(summary, "guessers")
            if g is None:
                raise Failed("lab run: no group 'guessers' in its summary")
            inside = [r for r in g["series"] if lo <= r["second"] and r["second"] + 1 <= hi + 0.5]
            answered = sum(sum(r["outcomes"].values()) for r in inside)
            extra = {
                "attacker_loops": self.attackers,
                "attacker_attempts": answered,
                "attacker_attempts_per_s": answered / len(inside) if inside else 0.0,
                "attacker_accepts": sum(r["outcomes"].get("success", 0) for r in g["series"]),
                "attacker_outcomes": g.get("outcomes"),
            }
        return {
            **extra,
            "driver": "portcullis lab run",
            "seconds": window,
            "loops": self.loops,
            "logins_per_s": rate,
            "full_per_s": rate if not self.resume else 0.0,
            "resumed_per_s": rate if self.resume else 0.0,
            "lab_eap": eap,
            "lab_outcomes": group.get("outcomes"),
            "server_cpu_s": c1 - c0,
            "cpu_ms_per_login": 1000 * (c1 - c0) / n if n else None,
            "machine_busy_cpu_s": m1[0] - m0[0],
            "machine_capacity_cpu_s": window * (os.cpu_count() or 1),
            "other_cpu_s": (m1[0] - m0[0]) - (c1 - c0),
            "niced_cpu_s": m1[1] - m0[1],
            "top_processes_cpu_s": top_users(snap0, snap1),
            "loadavg": open("/proc/loadavg").read().split()[:3],
            "wrong_keys": eap.get("wrong_keys", 0),
            "exit": proc.returncode,
        }
