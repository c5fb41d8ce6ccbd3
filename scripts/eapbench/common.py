"""Constants, logging and the error every part of the bench shares."""
import os
import sys


# The repository: this file is scripts/eapbench/common.py.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "target", "release", "portcullis")
HOST = "127.0.0.1"
TICKS = os.sysconf("SC_CLK_TCK")
SERVERS = ("portcullis", "freeradius", "freeradius-cache")
CELLS = ("tls-full", "tls-resumed", "ttls-full", "attack", "ttls-resumed", "control",
         "ttls-full-lab", "attack-lab", "tls-full-lab", "tls-resumed-lab")
# The rate cells driven by the lab's EAP driver (`portcullis lab run`): (method, resume,
# with the guessing stations). attack-lab runs right after ttls-full-lab, its "alone".
LAB_CELLS = {"ttls-full-lab": ("ttls", False, False), "attack-lab": ("ttls", False, True),
             "tls-full-lab": ("tls", False, False), "tls-resumed-lab": ("tls", True, False)}
# Round trips of a resumed EAP-TLS login over TLS 1.2 (Identity/Start, ClientHello/server
# Finished, client Finished/Success): the control cell's burst.
CONTROL_BURST = 3
# wpa_supplicant 2.10 phase1 flags pinning one TLS version.
PHASE1 = {
    "1.2": "tls_disable_tlsv1_0=1 tls_disable_tlsv1_1=1 tls_disable_tlsv1_2=0 tls_disable_tlsv1_3=1",
    "1.3": "tls_disable_tlsv1_0=1 tls_disable_tlsv1_1=1 tls_disable_tlsv1_2=1 tls_disable_tlsv1_3=0",
}
START_TIMEOUT = 180.0  # hashing 64 users at 600,000 iterations before the server starts
EXCHANGE_TIMEOUT = 30  # eapol_test -t (its default): one exchange, all its round trips
WARMUP = 60.0  # longest wait for every loop's first login before a cell's window opens
DRAIN = EXCHANGE_TIMEOUT + 5  # longest wait for the logins in flight when a window closes


def log(msg):
    print(f"eap-bench: {msg}", file=sys.stderr, flush=True)


class Failed(Exception):
    """A server that cannot be measured (the message says why)."""
