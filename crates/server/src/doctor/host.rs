//! This machine and these files: whether the listen addresses can be bound (a privileged
//! port needs `CAP_NET_BIND_SERVICE`), whether the certificates fit the enabled suites
//! (the very check `serve` and `tls check` run, [`portcullis_door::tls::server_config`]), and which
//! hash kernels this CPU runs (what `serve` logs and `hash bench` measures).

use std::net::SocketAddr;

use portcullis_hash::pbkdf2::{self, Backend, Prf};

use super::{Finding, Level};
use crate::config::Config;
use portcullis_door::tls::TlsSettings;

/// Certificates expiring sooner than this are a warning.
const EXPIRY_WARN_SECS: i64 = 14 * 24 * 3600;

pub(super) fn check(config: &Config, out: &mut Vec<Finding>) {
    listen_tcp("http", config.http, out);
    if let Some(a) = config.admin.listen {
        listen_tcp("admin", a, out);
    }
    if let Some(ca) = &config.admin.client_ca
        && let Err(e) = portcullis_door::tls::client_certs::ClientCa::load(
            ca,
            std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        )
    {
        out.push(Finding::new(
            Level::Fail,
            "admin",
            format!("admin.client_ca: {e}; fix: a PEM bundle of the admin CA certificates"),
        ));
    }
    for a in &config.radius.listen {
        listen_udp(*a, out);
    }
    if let Some(tls) = &config.tls {
        certificate("tls", tls, out);
    }
    if let Some(eap) = &config.radius.eap {
        let settings = TlsSettings {
            versions: eap.versions.clone(),
            cipher_suites: eap.cipher_suites.clone(),
            // The device CA is checked when RADIUS starts; the fit is about the server's.
            client_ca: None,
            ..TlsSettings::new(eap.cert.clone(), eap.key.clone())
        };
        certificate("radius.eap", &settings, out);
    }
    for a in &config.radius.radsec_listen {
        listen_tcp("radsec", *a, out);
    }
    if let Some(r) = &config.radius.radsec {
        let settings = TlsSettings {
            versions: r.versions.clone(),
            cipher_suites: r.cipher_suites.clone(),
            // The NAS CA is checked when RadSec starts; the fit is about the server's.
            client_ca: None,
            ..TlsSettings::new(r.cert.clone(), r.key.clone())
        };
        certificate("radius.radsec", &settings, out);
    }
    kernels(out);
}

fn bind_problem(what: &str, addr: SocketAddr, e: &std::io::Error) -> Finding {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::PermissionDenied => Finding::new(
            Level::Fail,
            "listen",
            format!(
                "{what} {addr}: port {} is privileged and this process may not bind it; fix: \
                 run under the packaged unit (AmbientCapabilities=CAP_NET_BIND_SERVICE) or \
                 `setcap cap_net_bind_service=+ep` on the binary, or use a port >= 1024",
                addr.port()
            ),
        ),
        // Most likely the running server itself (a doctor run beside it).
        ErrorKind::AddrInUse => Finding::new(
            Level::Warn,
            "listen",
            format!(
                "{what} {addr} is in use: fine if it is this server running; otherwise stop the other program or change the address"
            ),
        ),
        _ => Finding::new(
            Level::Fail,
            "listen",
            format!("{what} {addr}: {e}; fix: use an address of this machine"),
        ),
    }
}

pub(super) fn listen_tcp(what: &str, addr: SocketAddr, out: &mut Vec<Finding>) {
    out.push(match std::net::TcpListener::bind(addr) {
        Ok(_) => Finding::new(Level::Ok, "listen", format!("{what} {addr} can be bound")),
        Err(e) => bind_problem(what, addr, &e),
    });
}

fn listen_udp(addr: SocketAddr, out: &mut Vec<Finding>) {
    out.push(match std::net::UdpSocket::bind(addr) {
        Ok(_) => Finding::new(Level::Ok, "listen", format!("radius {addr} can be bound")),
        Err(e) => bind_problem("radius", addr, &e),
    });
}

pub(super) fn certificate(section: &'static str, s: &TlsSettings, out: &mut Vec<Finding>) {
    match portcullis_door::tls::server_config(s, None) {
        Ok(server) => out.push(Finding::new(
            Level::Ok,
            section,
            format!(
                "{} fits the suites: {}",
                s.cert.display(),
                portcullis_door::tls::suite_names(&server.config).join(", ")
            ),
        )),
        Err(e) => {
            out.push(Finding::new(
                Level::Fail,
                section,
                format!(
                    "{}: {e}; fix: use a certificate whose key usage fits the suites (check with \
                     `portcullis tls check --cert {} --key {}`) or change {section}.cipher_suites",
                    s.cert.display(),
                    s.cert.display(),
                    s.key.display()
                ),
            ));
            return;
        }
    }
    if let Ok(f) = portcullis_door::tls::facts::CertFacts::of_pem_file(&s.cert) {
        if f.expires_in_secs < 0 {
            out.push(Finding::new(
                Level::Fail,
                section,
                format!(
                    "{} expired on {}; fix: renew it, then kill -HUP the server (systemctl reload portcullis)",
                    s.cert.display(),
                    f.not_after
                ),
            ));
        } else if f.expires_in_secs < EXPIRY_WARN_SECS {
            out.push(Finding::new(
                Level::Warn,
                section,
                format!(
                    "{} expires on {}; fix: renew it, then systemctl reload portcullis",
                    s.cert.display(),
                    f.not_after
                ),
            ));
        }
    }
}

fn kernels(out: &mut Vec<Finding>) {
    let mut parts = Vec::new();
    for prf in [Prf::Sha256, Prf::Sha1, Prf::Sha512] {
        let cal = portcullis_hash::batch::calibration(prf);
        parts.push(format!(
            "pbkdf2-{} {} (under load {} x{})",
            prf.name(),
            pbkdf2::backend_name(prf, Backend::Auto),
            cal.best,
            cal.best_width
        ));
    }
    let argon2 = portcullis_hash::argon2_kernel::Backend::Auto.name();
    parts.push(format!("argon2 {argon2}"));
    out.push(Finding::new(Level::Ok, "hash kernels", parts.join(", ")));
    if argon2 == "portable" {
        out.push(Finding::new(
            Level::Note,
            "hash kernels",
            "no AVX2 on this CPU: argon2id runs the portable kernel (slower per login); \
             `portcullis hash calibrate` picks parameters for it",
        ));
    }
}
