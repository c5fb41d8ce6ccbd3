//! FreeRADIUS's 802.1X set-up for the demo's EAP section, the way `scripts/freeradius-eap`
//! sets it up for `scripts/eap-bench` (stock mode): the packaged EAP module with the
//! demo's CA, server certificate and key; no PEAP and EAP-MSCHAPv2 sections (they need
//! MS-CHAP, an NT hash the users do not have); `default_eap_type = tls` (a TTLS station
//! Naks to ttls); TLS versions and the session cache as shipped (TLS 1.2 at most, cache
//! off); an outer virtual server running `eap` and an `inner-tunnel` one checking TTLS's
//! inner PAP against the same `{X-PBKDF2}` users as the PAP sections.

use std::path::Path;

use super::EapSetup;
use super::fr_files::{fr_err, write};
use portcullis_lab::LabError;

/// The EAP edits of `mods-available/eap` and the two virtual servers, in `dir` (a copy of
/// the packaged configuration); the site listens on `port`.
pub(super) fn configure(dir: &Path, eap: &EapSetup, port: u16) -> Result<(), LabError> {
    let certs = dir.join("demo-certs");
    std::fs::create_dir_all(&certs).map_err(fr_err)?;
    for (from, to) in [
        (&eap.ca, "ca.pem"),
        (&eap.server.cert, "server.pem"),
        (&eap.server.key, "server.key"),
    ] {
        std::fs::copy(from, certs.join(to))
            .map_err(|e| fr_err(format!("{}: {e}", from.display())))?;
    }
    let path = dir.join("mods-available/eap");
    let text = std::fs::read_to_string(&path).map_err(fr_err)?;
    write(&path, &eap_module(&text)?)?;
    write(&dir.join("sites-enabled/demo"), &sites(port))?;
    Ok(())
}

/// The outer server (EAP conversations) and the inner one (TTLS's tunneled PAP), named
/// like the packaged one the shipped `ttls` section points at.
fn sites(port: u16) -> String {
    format!(
        "server demo {{\n  listen {{\n    type = auth\n    ipaddr = 127.0.0.1\n    port = {port}\n  }}\n  authorize {{\n    eap {{\n      ok = return\n    }}\n    files\n    pap\n  }}\n  authenticate {{\n    Auth-Type PAP {{\n      pap\n    }}\n    eap\n  }}\n  post-auth {{\n    Post-Auth-Type REJECT {{\n      eap\n    }}\n  }}\n}}\nserver inner-tunnel {{\n  authorize {{\n    files\n    pap\n  }}\n  authenticate {{\n    Auth-Type PAP {{\n      pap\n    }}\n  }}\n}}\n"
    )
}

/// The packaged EAP module with the demo's certificates and without PEAP/MSCHAPv2.
fn eap_module(text: &str) -> Result<String, LabError> {
    let certs = "${confdir}/demo-certs";
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let edits: [(&str, String); 6] = [
        ("default_eap_type = md5", "default_eap_type = tls".into()),
        (
            "private_key_password = ",
            "#private_key_password (none: the key is not encrypted)".into(),
        ),
        (
            "private_key_file = ",
            format!("private_key_file = {certs}/server.key"),
        ),
        (
            "certificate_file = ",
            format!("certificate_file = {certs}/server.pem"),
        ),
        ("ca_file = ", format!("ca_file = {certs}/ca.pem")),
        ("ca_path = ", "#ca_path (only ca_file is trusted)".into()),
    ];
    for (prefix, replacement) in edits {
        // The first occurrence: the module level, or tls-common.
        let line = lines
            .iter_mut()
            .find(|l| l.trim_start().starts_with(prefix))
            .ok_or_else(|| fr_err(format!("mods-available/eap: no `{prefix}` line")))?;
        let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
        *line = format!("{indent}{replacement}");
    }
    let mut out = lines.join("\n");
    out.push('\n');
    for section in ["peap", "mschapv2"] {
        out = drop_section(&out, section)?;
    }
    Ok(out)
}

/// `text` without the `name { ... }` subsection (braces counted outside comments).
fn drop_section(text: &str, name: &str) -> Result<String, LabError> {
    let opener = format!("{name} {{");
    let mut out = String::with_capacity(text.len());
    let mut depth: Option<i64> = None;
    let mut dropped = false;
    for line in text.split_inclusive('\n') {
        if depth.is_none() && !dropped && line.trim() == opener {
            depth = Some(0);
        }
        match depth.as_mut() {
            Some(d) => {
                let code = line.split('#').next().unwrap_or("");
                *d += code.matches('{').count() as i64 - code.matches('}').count() as i64;
                if *d <= 0 {
                    depth = None;
                    dropped = true;
                }
            }
            None => out.push_str(line),
        }
    }
    if !dropped {
        return Err(fr_err(format!(
            "mods-available/eap: no closed {name} section"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "eap {\n\tdefault_eap_type = md5\n\ttls-config tls-common {\n\t\tprivate_key_password = whatever\n\t\tprivate_key_file = /k\n\t\tcertificate_file = /c\n\t\tca_file = /ca\n\t\tca_path = ${cadir}\n\t}\n\tttls {\n\t\tdefault_eap_type = md5\n\t}\n\tpeap {\n\t\t# a comment with a { brace\n\t\tdefault_eap_type = mschapv2\n\t\tx {\n\t\t}\n\t}\n\tmschapv2 {\n\t}\n}\n";

    #[test]
    fn issue_25_eap_module_gets_the_demo_certificates_and_loses_peap() {
        let out = eap_module(MODULE).unwrap();
        assert!(out.contains("\tdefault_eap_type = tls\n"));
        // Only the first default_eap_type (the module's) changes; ttls keeps its own.
        assert!(out.contains("\t\tdefault_eap_type = md5\n"));
        assert!(out.contains("\t\tprivate_key_file = ${confdir}/demo-certs/server.key\n"));
        assert!(out.contains("\t\tcertificate_file = ${confdir}/demo-certs/server.pem\n"));
        assert!(out.contains("\t\tca_file = ${confdir}/demo-certs/ca.pem\n"));
        assert!(out.contains("#ca_path"));
        assert!(!out.contains("whatever"));
        assert!(!out.contains("peap") && !out.contains("mschapv2"), "{out}");
        assert!(out.trim_end().ends_with('}'));
        assert_eq!(out.matches('{').count(), out.matches('}').count());
        assert!(eap_module("eap {\n}\n").is_err());
    }
}
