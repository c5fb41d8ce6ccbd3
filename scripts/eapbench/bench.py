"""One server's whole measurement: the functional checks, then every cell per TLS version."""
import os
import secrets

from .cells import Cell, ControlCell
from .common import CONTROL_BURST, EXCHANGE_TIMEOUT, Failed, HOST, LAB_CELLS, WARMUP, log
from .eapol import eapol_cmd, mac, run_once
from .labcell import LabCell
from .measure import settle
from .report import fmt
from .servers import free_udp_port, start_freeradius, start_portcullis, stop, tail


def checks(port, secret, confs, users, pki):
    """Single exchanges: what must succeed, resume and fail."""
    (u0, p0) = users[0]
    out = {}
    cmd = lambda conf, r=0, station=mac(0xcc, 1): eapol_cmd(conf, port, secret, r, station)
    for tls in ("1.2", "1.3"):
        for method in ("tls", "ttls"):
            conf = confs.get(method, u0, p0, tls)
            out[f"{method}-{tls}"] = run_once(cmd(conf), EXCHANGE_TIMEOUT + 5)
            out[f"{method}-{tls}-r3"] = run_once(cmd(conf, 3), 4 * EXCHANGE_TIMEOUT + 5)
    out["ttls-wrong-password"] = run_once(
        cmd(confs.get("ttls", u0, "not-" + p0, "1.2", tag="-wrong")), EXCHANGE_TIMEOUT + 5)
    out["ttls-unknown-user"] = run_once(
        cmd(confs.get("ttls", "no-such-user", p0, "1.2")), EXCHANGE_TIMEOUT + 5)
    out["tls-other-ca"] = run_once(
        cmd(confs.get("tls", u0, None, "1.2", cert=pki["rogue"], tag="-rogue")),
        EXCHANGE_TIMEOUT + 5)
    expect_fail = ("ttls-wrong-password", "ttls-unknown-user", "tls-other-ca")
    for k, v in out.items():
        v["expected"] = "failure" if k in expect_fail else "success"
        v["as_expected"] = (not v["success"]) if k in expect_fail else (
            v["success"] and v["mppe"].endswith("mismatch: 0"))
    return out


def bench_server(name, a, pki, users, confs, work):
    secret = secrets.token_hex(16)
    port = free_udp_port()
    res = {"server": name}
    log(f"{name}: provisioning {len(users)} users (PBKDF2-SHA256 x{a.iterations}) and starting")
    proc = None
    try:
        if name == "portcullis":
            proc, pid, version, command, http = start_portcullis(work, pki, users, secret, port,
                                                                 a.iterations)
            res["metrics_url"] = f"http://{HOST}:{http}/metrics"
        else:
            proc, pid, version, command = start_freeradius(work, pki, users, secret, port,
                                                           a.iterations, name.endswith("-cache"))
        res.update(version=version, command=command, pid=pid, port=port)
        log(f"{name}: {version}, pid {pid}, port {port}; functional checks")
        res["checks"] = checks(port, secret, confs, users, pki)
        bad = [k for k, v in res["checks"].items() if not v["as_expected"]]
        for k in bad:
            c = res["checks"][k]
            log(f"{name}: check {k}: expected {c['expected']}, got rc={c['rc']} {c['mppe']!r}")
        if not res["checks"]["tls-1.2"]["success"] or not res["checks"]["ttls-1.2"]["success"]:
            raise Failed("EAP-TLS or TTLS/PAP over TLS 1.2 does not log in: "
                         + ", ".join(bad) + "; log:\n    " + tail(os.path.join(work, "server.log")))
        for k in (f"{m}-{v}-r3" for m in ("tls", "ttls") for v in ("1.2", "1.3")):
            c = res["checks"][k]
            log(f"{name}: {k}: {sum(c['logins'][1:])} of {max(0, len(c['logins']) - 1)} "
                "reauthentications resumed")
        res["cells"] = {}
        legit_users = users[:a.loops] if len(users) >= a.loops else users
        n_legit = len(legit_users)
        spare = users[a.loops:] if len(users) > a.loops else users

        def run_lab_cell(name, cells, cell_name, method, resume, n_att, tls):
            settle(pid)
            log(f"{name}: TLS {tls}: {cell_name} ({a.loops} lab stations"
                + (f" + {n_att} guessing stations" if n_att else "")
                + f", {a.duration:g} s)")
            c = LabCell(method, resume, a.duration, a.loops, n_att, spare).run(
                work, port, secret, pki, legit_users, tls, pid)
            cells[cell_name] = c
            log(f"{name}: TLS {tls}: {cell_name}: {c['logins_per_s']:.1f} logins/s, "
                f"server CPU {fmt(c['cpu_ms_per_login'], '.2f')} ms/login, exit {c['exit']}")

        for tls in a.tls:
            if not res["checks"][f"tls-{tls}"]["success"] or not res["checks"][f"ttls-{tls}"]["success"]:
                log(f"{name}: TLS {tls} does not log in; no cells for it")
                res["cells"][tls] = {"skipped": f"TLS {tls} logins fail the functional check"}
                continue
            cells = res["cells"][tls] = {}

            def legit(method, reauths, loops):
                # -r processes outlive the window (they are stopped with it).
                limit = WARMUP + a.duration + 30 if reauths else None
                out = []
                for i in range(loops):
                    u, pw = legit_users[i % n_legit]
                    out.append(eapol_cmd(confs.get(method, u, pw, tls), port, secret, reauths,
                                         mac(0x10, i), limit))
                return out

            plan = [
                ("tls-full", legit("tls", 0, a.loops), []),
                ("tls-resumed", legit("tls", a.reauths, a.resume_loops), []),
                ("ttls-full", legit("ttls", 0, a.loops), []),
                ("attack", legit("ttls", 0, a.loops),
                 [eapol_cmd(confs.get("ttls", spare[j % len(spare)][0],
                                      "guess-" + spare[j % len(spare)][1], tls, tag="-guess"),
                            port, secret, 0, mac(0x66, j)) for j in range(a.attackers)]),
                ("ttls-resumed", legit("ttls", a.reauths, a.resume_loops), []),
            ]
            for cell_name, legit_cmds, attack_cmds in plan:
                if cell_name == "attack" and tls != a.tls[0] or cell_name not in a.cells:
                    continue
                settle(pid)
                log(f"{name}: TLS {tls}: {cell_name} ({len(legit_cmds)} loops"
                    + (f" + {len(attack_cmds)} guessing stations" if attack_cmds else "")
                    + f", {a.duration:g} s)")
                c = Cell(cell_name, a.duration).run(legit_cmds, attack_cmds, pid)
                c["command"] = " ".join(legit_cmds[0]).replace(secret, "SECRET")
                if attack_cmds:
                    c["attacker_command"] = " ".join(attack_cmds[0]).replace(secret, "SECRET")
                cells[cell_name] = c
                log(f"{name}: TLS {tls}: {cell_name}: {c['full_per_s']:.1f} full/s, "
                    f"{c['resumed_per_s']:.1f} resumed/s, server CPU {c['server_cpu_s']:.2f} s, "
                    f"failures {c['process_failures']}")
            for cell_name, (method, resume, attacked) in LAB_CELLS.items():
                # attack-lab runs last of all (below): the users it guesses stay "under
                # attack" in the server's throttle for minutes, which would refuse the
                # next cells' new stations of those users.
                if cell_name not in a.cells or attacked:
                    continue
                run_lab_cell(name, cells, cell_name, method, resume, 0, tls)
            derive(cells, a)
        first = res["cells"].get(a.tls[0], {})
        if "attack-lab" in a.cells and "skipped" not in first:
            method, resume, _ = LAB_CELLS["attack-lab"]
            # Its "alone" is measured again right before it (same stations), so a busy
            # neighbour that comes and goes hits both halves of the retention alike.
            run_lab_cell(name, first, "attack-lab-alone", method, resume, 0, a.tls[0])
            run_lab_cell(name, first, "attack-lab", method, resume, a.attackers, a.tls[0])
            derive(first, a)
        if "control" in a.cells:
            settle(pid)
            log(f"{name}: control: {a.resume_loops} loops of {CONTROL_BURST} Status-Server "
                f"round trips and a 100 ms pause, {a.duration:g} s")
            c = res["control"] = ControlCell(a.duration, secret, port, CONTROL_BURST).run(
                a.resume_loops, pid)
            log(f"{name}: control: {c['round_trips_per_s']:.0f} round trips/s, "
                f"{fmt(c['cpu_us_per_round_trip'], '.0f')} us server CPU per round trip, "
                f"{c['lost']} unanswered")
        if name == "portcullis":
            try:
                import urllib.request
                text = urllib.request.urlopen(res["metrics_url"], timeout=5).read().decode()
                res["metrics_eap"] = [l for l in text.splitlines()
                                      if "eap" in l.lower() and not l.startswith("#")]
            except Exception as e:  # noqa: BLE001 - metrics are a bonus
                res["metrics_eap"] = [f"unavailable: {e}"]
    except Failed as e:
        res["error"] = str(e)
        log(f"{name}: FAILED: {e}")
    finally:
        stop(proc)
    return res


def derive(cells, a):
    """CPU per login (resumed cells net of any full logins in them) and the retention."""
    for method in ("tls", "ttls"):
        full, res = cells.get(f"{method}-full"), cells.get(f"{method}-resumed")
        if full:
            n = full["full_logins"] + full["resumed_logins"]
            full["cpu_ms_per_login"] = 1000 * full["server_cpu_s"] / n if n else None
        if res:
            n_all = res["full_logins"] + res["resumed_logins"]
            res["cpu_ms_per_login_all"] = 1000 * res["server_cpu_s"] / n_all if n_all else None
            per_full = (full or {}).get("cpu_ms_per_login")
            if not res["resumed_logins"]:
                res["cpu_ms_per_resumed_login"] = None
            elif not res["full_logins"]:
                res["cpu_ms_per_resumed_login"] = 1000 * res["server_cpu_s"] / res["resumed_logins"]
            elif per_full is not None:
                net = res["server_cpu_s"] * 1000 - res["full_logins"] * per_full
                res["cpu_ms_per_resumed_login"] = max(0.0, net) / res["resumed_logins"]
            else:
                res["cpu_ms_per_resumed_login"] = None
            res["resumed_share"] = res["resumed_logins"] / n_all if n_all else 0.0
            # eapol_test pauses 100 ms before each reauthentication: what K loops can ask for.
            lat = (res["all_p50_ms"] or 0) / 1000
            res["reauth_ceiling_per_s"] = res["loops"] / (0.1 + lat) if n_all else None
    # Retention: the same legitimate stations' logins/s beside the guessers over alone.
    for alone_name, under_name in (("attack-lab-alone", "attack-lab"), ("ttls-full", "attack")):
        alone, under = cells.get(alone_name), cells.get(under_name)
        if alone and under:
            under["legit_per_s_alone"] = alone["logins_per_s"]
            under["legit_per_s_under_attack"] = under["logins_per_s"]
            under["retention"] = (under["logins_per_s"] / alone["logins_per_s"]
                                  if alone["logins_per_s"] else None)
    alone, under = cells.get("attack-lab-alone"), cells.get("attack-lab")
    if alone and under:
        under["server_cpu_ms_per_legit_login"] = under["cpu_ms_per_login"]
    alone, under = cells.get("ttls-full"), cells.get("attack")
    if alone and under:
        under["legit_p99_ms_alone"] = alone["full_p99_ms"]
        n = under["full_logins"] + under["resumed_logins"]
        under["server_cpu_ms_per_legit_login"] = 1000 * under["server_cpu_s"] / n if n else None
