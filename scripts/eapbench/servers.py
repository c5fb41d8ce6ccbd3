"""Starting, readying and stopping the servers under test (Portcullis, FreeRADIUS)."""
import os
import signal
import socket
import subprocess
import sys
import time

from . import common
from .common import Failed, HOST, ROOT, START_TIMEOUT, log
from .measure import proc_stats


def free_port(kind):
    """A port of `kind` (SOCK_DGRAM, SOCK_STREAM) free on HOST right now."""
    s = socket.socket(socket.AF_INET, kind)
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def free_udp_port():
    return free_port(socket.SOCK_DGRAM)


def free_tcp_port():
    return free_port(socket.SOCK_STREAM)


def udp_bound(port):
    needle = f"0100007F:{port:04X}"
    with open("/proc/net/udp") as f:
        return any(l.split()[1] == needle for l in f.readlines()[1:])


def tail(path, n=12):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return ""
    lines = [l for l in lines if "!!" not in l]
    return "\n    ".join(lines[-n:])


def wait_ready(proc, port, logpath, pid_of):
    end = time.monotonic() + START_TIMEOUT
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise Failed(f"exited at start-up (status {proc.returncode}); its log:\n    "
                         + tail(logpath))
        if udp_bound(port):
            pid = pid_of()
            if pid:
                return pid
        time.sleep(0.2)
    raise Failed(f"not listening on {HOST}:{port} after {START_TIMEOUT:.0f} s; its log:\n    "
                 + tail(logpath))


def stop(proc):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


def group_member(pgid, comm):
    """The pid of the process named `comm` in process group `pgid`."""
    for pid, name, fields in proc_stats():
        if name == comm and int(fields[2]) == pgid:
            return pid
    return None


# The server gets a process group of its own (stopped as a whole), but stays in this
# session: with the kernel's autogroup scheduling a new session would be a scheduling group
# of its own, and its CPU share would then depend on how many other sessions are busy.
OWN_GROUP = ({"process_group": 0} if sys.version_info >= (3, 11)
             else {"preexec_fn": os.setpgrp})


def start_freeradius(work, pki, users, secret, port, iterations, cache):
    tsv = os.path.join(work, "users.tsv")
    with open(tsv, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        for name, pw in users:
            f.write(f"{name}\t{pw}\n")
    cmd = [os.path.join(ROOT, "scripts", "freeradius-eap")] + (["--cache"] if cache else []) + [
        str(port), secret, tsv, pki["ca"], pki["server_cert"], pki["server_key"], str(iterations)]
    logpath = os.path.join(work, "server.log")
    proc = subprocess.Popen(cmd, stdout=open(logpath, "w"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, **OWN_GROUP)
    shown = [c if c != secret else "SECRET" for c in cmd]
    try:
        pid = wait_ready(proc, port, logpath, lambda: group_member(proc.pid, "freeradius"))
    except Failed:
        stop(proc)
        raise
    out = subprocess.run(["freeradius", "-v"], capture_output=True, text=True).stdout
    version = next((l.strip() for l in out.splitlines() if "FreeRADIUS Version" in l), "?")
    return proc, pid, version, " ".join(shown)


def build_portcullis():
    if os.access(common.BIN, os.X_OK):
        return
    log("target/release/portcullis is missing: cargo build --release")
    r = subprocess.run(["cargo", "build", "--release", "--locked", "--bin", "portcullis"],
                       cwd=ROOT)
    if r.returncode != 0 or not os.access(common.BIN, os.X_OK):
        raise Failed("cargo build --release failed")


def start_portcullis(work, pki, users, secret, port, iterations):
    build_portcullis()
    data = os.path.join(work, "data")
    tsv = os.path.join(work, "users.tsv")
    with open(tsv, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        for name, pw in users:
            r = subprocess.run([common.BIN, "hash", "create", "--algorithm", "pbkdf2-sha256",
                                "--iterations", str(iterations), "--password-stdin"],
                               input=pw + "\n", capture_output=True, text=True)
            if r.returncode != 0:
                raise Failed(f"hash create: {r.stderr.strip()}")
            f.write(f"{name}\t{r.stdout.strip()}\n")
    r = subprocess.run([common.BIN, "user", "import", tsv, "--data-dir", data], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise Failed(f"user import: {r.stderr.strip()}")
    r = subprocess.run([common.BIN, "nas", "add", "bench", "--address", "127.0.0.0/8", "--secret-stdin",
                        "--data-dir", data], input=secret + "\n", capture_output=True, text=True)
    if r.returncode != 0:
        raise Failed(f"nas add: {r.stderr.strip()}")
    config = os.path.join(work, "portcullis.toml")
    with open(config, "w") as f:
        f.write(f"""[radius]
listen = ["{HOST}:{port}"]

[radius.eap]
cert = "{pki['server_cert']}"
key = "{pki['server_key']}"
client_ca = "{pki['ca']}"
methods = ["tls", "ttls"]

[policy]
algorithm = "pbkdf2-sha256"
iterations = {iterations}
""")
    http = free_tcp_port()
    cmd = [common.BIN, "serve", "--data-dir", data, "--config", config, "--http", f"{HOST}:{http}"]
    logpath = os.path.join(work, "server.log")
    proc = subprocess.Popen(cmd, stdout=open(logpath, "w"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, **OWN_GROUP)
    try:
        pid = wait_ready(proc, port, logpath, lambda: proc.pid)
    except Failed as e:
        stop(proc)
        if "radius.eap" in str(e) or "unknown field" in str(e):
            raise Failed("this build of portcullis does not know [radius.eap] (EAP not landed "
                         f"yet?): {e}") from None
        raise
    version = subprocess.run([common.BIN, "--version"], capture_output=True, text=True).stdout.strip()
    return proc, pid, version or "portcullis (version unknown)", " ".join(cmd), http
