"""The parts of scripts/eap-bench (issue 25): servers, cells, measurement, report. What
the scripts under scripts/eap-cpu reuse is re-exported here; the portcullis binary they
run is `common.BIN` (set it there, the servers and lab cells read it at each start)."""
from . import common
from .common import START_TIMEOUT, TICKS, log
from .eapol import Confs, eapol_cmd, mac, run_once
from .labcell import LabCell
from .measure import find_group, settle
from .pki import make_pki
from .servers import free_udp_port, start_freeradius, start_portcullis, stop

__all__ = ["common", "START_TIMEOUT", "TICKS", "log", "Confs", "eapol_cmd", "mac",
           "run_once", "LabCell", "find_group", "settle", "make_pki", "free_udp_port",
           "start_freeradius", "start_portcullis", "stop"]
