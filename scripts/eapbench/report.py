"""The markdown tables printed at the end."""
import os

from .common import CONTROL_BURST, LAB_CELLS


def cpu_info():
    info = {}
    for line in open("/proc/cpuinfo"):
        k, _, v = line.partition(":")
        k = k.strip()
        if k in ("model name", "cpu family", "model") and k not in info:
            info[k] = v.strip()
    return {"model_name": info.get("model name", "?"), "family": info.get("cpu family", "?"),
            "model": info.get("model", "?"), "cores": os.cpu_count()}


def fmt(v, spec=".1f", none="-"):
    return none if v is None else format(v, spec)


def table(results, a):
    cpu = results["cpu"]
    print(f"CPU: {cpu['model_name']} (family {cpu['family']}, model {cpu['model']}), "
          f"{cpu['cores']} cores; users PBKDF2-SHA256 x{a.iterations}; {a.loops} eapol_test "
          f"loops ({a.resume_loops} in the resumed cells, eapol_test -r {a.reauths}), "
          f"{a.duration:g} s per cell")
    print()
    print("| server | TLS | EAP-TLS full/s | EAP-TLS resumed/s | TTLS/PAP full/s | "
          "TTLS/PAP resumed/s | p99 ms TLS full / resumed | p99 ms TTLS full / resumed | "
          "server CPU ms/login TLS full / resumed | server CPU ms/login TTLS full / resumed | "
          f"retention ({a.attackers} guessers) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results["servers"].items():
        if "error" in r:
            why = " ".join(r["error"].split()).replace("|", "/")
            print(f"| {name} | - | failed: {why[:300]} |" + " |" * 8)
            continue
        for tls, cells in r["cells"].items():
            if "skipped" in cells:
                print(f"| {name} | {tls} | {cells['skipped']} |" + " |" * 8)
                continue
            tf, tr = cells.get("tls-full", {}), cells.get("tls-resumed", {})
            sf, sr = cells.get("ttls-full", {}), cells.get("ttls-resumed", {})
            att = cells.get("attack", {})

            def resumed(c):
                if not c:
                    return "-"
                text = fmt(c["resumed_per_s"])
                if c["resumed_share"] < 0.99:
                    text += (f" (of {c['logins_per_s']:.1f} reauth/s: "
                             f"{c['resumed_share']:.0%} resumed)")
                return text

            def p99(full, res):
                r99 = res.get("resumed_p99_ms") if res.get("resumed_logins") else res.get("all_p99_ms")
                return f"{fmt(full.get('full_p99_ms'), '.0f')} / {fmt(r99, '.0f')}"

            def cpu_ms(full, res, spec):
                r = res.get("cpu_ms_per_resumed_login")
                if r is None:
                    r = res.get("cpu_ms_per_login_all")
                return f"{fmt(full.get('cpu_ms_per_login'), spec)} / {fmt(r, spec)}"

            ret = (f"{att['retention']:.2f} ({att['legit_per_s_under_attack']:.1f} of "
                   f"{att['legit_per_s_alone']:.1f}/s)" if att.get("retention") is not None else "-")
            print(f"| {name} | {tls} | {fmt(tf.get('full_per_s'))} | {resumed(tr)} | "
                  f"{fmt(sf.get('full_per_s'))} | {resumed(sr)} | {p99(tf, tr)} | {p99(sf, sr)} | "
                  f"{cpu_ms(tf, tr, '.2f')} | {cpu_ms(sf, sr, '.1f')} | {ret} |")
    print()
    lab_rows = [(name, tls, cells) for name, r in results["servers"].items()
                for tls, cells in r.get("cells", {}).items()
                if isinstance(cells, dict) and any(k in cells for k in LAB_CELLS)]
    if lab_rows:
        print(f"Driven by the lab's EAP driver (`portcullis lab run`, {a.loops} stations in "
              "closed loops, one process) instead of eapol_test:")
        print()
        print("| server | TLS | " + " | ".join(f"{k} logins/s | {k} server CPU ms/login"
                                                 for k in LAB_CELLS) + " |")
        print("|---|---|" + "---|---|" * len(LAB_CELLS))
        for name, tls, cells in lab_rows:
            row = []
            for k in LAB_CELLS:
                c = cells.get(k, {})
                row += [fmt(c.get("logins_per_s")), fmt(c.get("cpu_ms_per_login"), ".2f")]
            print(f"| {name} | {tls} | " + " | ".join(row) + " |")
        print()
        for name, tls, cells in lab_rows:
            att = cells.get("attack-lab", {})
            if att.get("retention") is not None:
                print(f"- {name} TLS {tls} attack-lab: retention {att['retention']:.2f} "
                      f"({att['legit_per_s_under_attack']:.1f} legitimate logins/s beside "
                      f"{att['attacker_loops']} guessing lab stations, "
                      f"{att['attacker_attempts_per_s']:.1f} guesses answered/s, over "
                      f"{att['legit_per_s_alone']:.1f}/s alone right before); server CPU "
                      f"{fmt(att.get('cpu_ms_per_login'), '.2f')} ms per legitimate login "
                      f"(guessers' cost included) vs "
                      f"{fmt(cells.get('attack-lab-alone', {}).get('cpu_ms_per_login'), '.2f')} "
                      "alone")
        print()
    print("Functional checks (single eapol_test runs; -r 3: reauthentications resumed of 3):")
    print()
    keys = [f"{m}-{v}" for v in ("1.2", "1.3") for m in ("tls", "ttls")]
    hdr = keys + [k + "-r3" for k in keys] + ["ttls-wrong-password", "ttls-unknown-user",
                                               "tls-other-ca"]
    print("| server | " + " | ".join(hdr) + " |")
    print("|---|" + "---|" * len(hdr))
    for name, r in results["servers"].items():
        if "checks" not in r:
            continue
        row = []
        for k in hdr:
            c = r["checks"][k]
            if c["expected"] == "failure":
                row.append("refused" if not c["success"] else "ACCEPTED")
            elif not c["as_expected"]:
                row.append(f"FAIL (rc {c['rc']})")
            elif k.endswith("-r3"):
                row.append(f"ok, {sum(c['logins'][1:])}/{len(c['logins']) - 1} resumed")
            else:
                row.append("ok")
        print(f"| {name} | " + " | ".join(row) + " |")
    print()
    for name, r in results["servers"].items():
        for tls, cells in r.get("cells", {}).items():
            for cn, c in cells.items():
                if not isinstance(c, dict):
                    continue
                notes = []
                if c.get("process_failures"):
                    notes.append(f"{c['process_failures']} eapol_test runs failed")
                if c.get("mppe_mismatches"):
                    notes.append(f"{c['mppe_mismatches']} MPPE mismatches")
                if c.get("attacker_accepts"):
                    notes.append(f"{c['attacker_accepts']} GUESSES ACCEPTED")
                if "loops_warm" in c and c["loops_warm"] < c["loops"]:
                    notes.append(f"only {c['loops_warm']} of {c['loops']} loops logged in")
                if c.get("wrong_keys"):
                    notes.append(f"{c['wrong_keys']} MPPE key mismatches (lab)")
                if c.get("exit") not in (None, 0, 1):
                    notes.append(f"lab run exited {c['exit']}")
                ceil = c.get("reauth_ceiling_per_s")
                if ceil and c["logins_per_s"] >= 0.8 * ceil:
                    notes.append(f"{c['logins_per_s']:.0f} reauth/s is near what {c['loops']} "
                                 f"loops ask for ({ceil:.0f}/s with eapol_test's 100 ms pause): "
                                 "bound by the load generator, not the server")
                cap = c.get("machine_capacity_cpu_s") or 0
                if cap and c.get("niced_cpu_s", 0) > 0.1 * cap:
                    notes.append(f"niced background processes used {c['niced_cpu_s']:.1f} of "
                                 f"{cap:.0f} CPU-s (server {c['server_cpu_s']:.1f})")
                if c.get("attacker_loops"):
                    notes.append(f"{c['attacker_attempts_per_s']:.1f} guesses answered/s")
                if notes:
                    print(f"- {name} TLS {tls} {cn}: " + "; ".join(notes))
    for name, r in results["servers"].items():
        c = r.get("control")
        if not c:
            continue
        us = c.get("cpu_us_per_round_trip")
        print(f"- {name} control (Status-Server, no EAP or TLS work, {c['loops']} loops of "
              f"{c['burst']} round trips and a 100 ms pause): "
              f"{fmt(us, '.0f')} us server CPU per round trip at "
              f"{c['round_trips_per_s']:.0f} round trips/s, {c['lost']} unanswered")
        for tls, cells in r.get("cells", {}).items():
            tr = cells.get("tls-resumed", {}) if isinstance(cells, dict) else {}
            tf = cells.get("tls-full", {}) if isinstance(cells, dict) else {}
            rm, fm = tr.get("cpu_ms_per_resumed_login"), tf.get("cpu_ms_per_login")
            if us and rm and fm:
                floor = CONTROL_BURST * us / 1000
                print(f"  - TLS {tls}: a resumed EAP-TLS login's {CONTROL_BURST} round trips "
                      f"cost ~{floor:.2f} ms of transport by the control; resumed {rm:.2f} ms "
                      f"= {rm / fm:.2f} of full {fm:.2f} ms; above the transport: "
                      f"{max(0.0, rm - floor):.2f} ms resumed vs {max(0.0, fm - floor):.2f} ms "
                      f"full beyond the same {CONTROL_BURST} round trips")
    print(f"(details: {results['out']}/eap-bench.json)")
