"""eapol_test configurations, command lines, and what its output says."""
import os
import subprocess

from .common import EXCHANGE_TIMEOUT, HOST, PHASE1


def conf_text(method, user, password, pki, tls, cert=None):
    lines = ["network={", "  key_mgmt=IEEE8021X", f'  identity="{user}"',
             f'  ca_cert="{pki["ca"]}"', f'  phase1="{PHASE1[tls]}"']
    if method == "ttls":
        lines += ["  eap=TTLS", '  anonymous_identity="anonymous"', f'  password="{password}"',
                  '  phase2="auth=PAP"']
    else:
        crt, key = cert or pki["client"](user)
        lines += ["  eap=TLS", f'  client_cert="{crt}"', f'  private_key="{key}"']
    return "\n".join(lines + ["}", ""])


class Confs:
    """eapol_test configuration files, written once and reused."""

    def __init__(self, d, pki):
        self.d, self.pki, self.cache = d, pki, {}
        os.makedirs(d, exist_ok=True)

    def get(self, method, user, password, tls, cert=None, tag=""):
        key = (method, user, password, tls, tag)
        if key not in self.cache:
            path = os.path.join(self.d, f"{method}-{tls}-{user}{tag}.conf")
            with open(path, "w") as f:
                f.write(conf_text(method, user, password, self.pki, tls, cert))
            os.chmod(path, 0o600)
            self.cache[key] = path
        return self.cache[key]


def mac(kind, i):
    return f"02:{kind:02x}:00:00:{(i >> 8) & 0xff:02x}:{i & 0xff:02x}"


def eapol_cmd(conf, port, secret, reauths, station, timeout=None):
    """eapol_test's -t bounds the whole process (all its reauthentications)."""
    timeout = timeout or EXCHANGE_TIMEOUT * (1 + reauths)
    return ["eapol_test", "-c", conf, "-a", HOST, "-p", str(port), "-s", secret,
            "-r", str(reauths), "-t", str(int(timeout)), "-M", station]


def parse_output(text):
    """Per-login (resumed?) list and the final verdict of one eapol_test output."""
    logins, resumed = [], False
    for line in text.splitlines():
        if "Handshake finished - resumed=1" in line:
            resumed = True
        elif "CTRL-EVENT-EAP-SUCCESS" in line:
            logins.append(resumed)
            resumed = False
        elif "Triggering EAP reauthentication" in line:
            resumed = False
    mppe = next((l for l in text.splitlines() if l.startswith("MPPE keys OK:")), "")
    versions = sorted({l.split("Using TLS version", 1)[1].strip()
                       for l in text.splitlines() if "Using TLS version" in l})
    return logins, mppe, text.rstrip().endswith("SUCCESS"), versions


def run_once(cmd, timeout):
    """One eapol_test exchange (functional checks)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": None, "success": False, "logins": [], "mppe": "", "versions": []}
    logins, mppe, ok, versions = parse_output(r.stdout)
    return {"rc": r.returncode, "success": r.returncode == 0 and ok, "logins": logins,
            "resumed": sum(logins), "mppe": mppe, "versions": versions}
