//! Verifier tests: a controlled clock, an in-memory credential source with true
//! compare-and-set, and stored strings built with independent crates (RustCrypto's
//! `pbkdf2` and `hmac`), not with our hash kernel.

mod admission;
mod memory;
mod pool;
mod proofs;
mod remote;
mod stations;
mod throttling;
mod waves;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use futures::future::{BoxFuture, FutureExt};
use hmac::Mac;
use parking_lot::Mutex;
use portcullis_hash::{PepperKey, Peppers, Policy, Prf};
use zeroize::Zeroizing;

use crate::pool::JobHook;
use crate::{
    Attempt, Clock, CredentialSource, ManualClock, MemoryThrottleStore, PrincipalKind, Protocol,
    SourceError, StoredCredentials, Verifier, VerifierConfig,
};

/// PBKDF2-SHA256 PHC string computed with RustCrypto.
pub(crate) fn phc(password: &str, iterations: u32) -> String {
    let salt = b"0123456789abcdef";
    let mut out = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password.as_bytes(), salt, iterations, &mut out);
    format!(
        "$pbkdf2-sha256$i={iterations},l=32${}${}",
        STANDARD_NO_PAD.encode(salt),
        STANDARD_NO_PAD.encode(out)
    )
}

pub(crate) const PEPPER: [u8; 32] = [0x42; 32];

/// `$hmac-sha256$k=k1$<tag>` computed with RustCrypto's HMAC.
pub(crate) fn peppered(secret: &str) -> String {
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&PEPPER).unwrap();
    mac.update(secret.as_bytes());
    let tag = mac.finalize().into_bytes();
    format!("$hmac-sha256$k=k1${}", STANDARD_NO_PAD.encode(tag))
}

pub(crate) fn peppers() -> Peppers {
    let mut p = Peppers::new();
    p.insert(PepperKey::new("k1", PEPPER).unwrap(), true);
    p
}

/// How the test source misbehaves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    Error,
    Hang,
}

/// In-memory credentials with true compare-and-set.
pub(crate) struct MemSource {
    pub creds: Mutex<HashMap<(PrincipalKind, String), StoredCredentials>>,
    pub fault: Mutex<Fault>,
    pub lookups: AtomicUsize,
    pub replace_calls: AtomicUsize,
    pub replaced: AtomicUsize,
    /// Lookups wait here after reading, when set (to line concurrent logins up).
    pub gate: Mutex<Option<Arc<tokio::sync::Barrier>>>,
    /// Told the result of every `replace_hash` call.
    pub replace_tx: Mutex<Option<tokio::sync::mpsc::UnboundedSender<bool>>>,
}

impl MemSource {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(MemSource {
            creds: Mutex::new(HashMap::new()),
            fault: Mutex::new(Fault::None),
            lookups: AtomicUsize::new(0),
            replace_calls: AtomicUsize::new(0),
            replaced: AtomicUsize::new(0),
            gate: Mutex::new(None),
            replace_tx: Mutex::new(None),
        })
    }

    pub(crate) fn add(&self, kind: PrincipalKind, name: &str, hashes: Vec<String>) {
        self.creds.lock().insert(
            (kind, name.to_owned()),
            StoredCredentials {
                hashes,
                disabled: false,
            },
        );
    }

    pub(crate) fn hashes(&self, kind: PrincipalKind, name: &str) -> Vec<String> {
        self.creds.lock()[&(kind, name.to_owned())].hashes.clone()
    }
}

impl CredentialSource for MemSource {
    fn credentials<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, SourceError>> {
        async move {
            self.lookups.fetch_add(1, Ordering::SeqCst);
            let fault = *self.fault.lock();
            let found = match fault {
                Fault::Error => return Err(SourceError("connection refused".into())),
                Fault::Hang => futures::future::pending().await,
                Fault::None => self
                    .creds
                    .lock()
                    .get(&(kind, principal.to_owned()))
                    .cloned(),
            };
            // Read first, then wait: every gated lookup sees the state before any of them
            // returns.
            let gate = self.gate.lock().clone();
            if let Some(g) = gate {
                g.wait().await;
            }
            Ok(found)
        }
        .boxed()
    }

    fn replace_hash<'a>(
        &'a self,
        kind: PrincipalKind,
        principal: &'a str,
        old: &'a str,
        new: &'a str,
    ) -> BoxFuture<'a, Result<bool, SourceError>> {
        async move {
            self.replace_calls.fetch_add(1, Ordering::SeqCst);
            let done = {
                let mut creds = self.creds.lock();
                match creds
                    .get_mut(&(kind, principal.to_owned()))
                    .and_then(|c| c.hashes.iter_mut().find(|h| h.as_str() == old))
                {
                    Some(h) => {
                        *h = new.to_owned();
                        self.replaced.fetch_add(1, Ordering::SeqCst);
                        true
                    }
                    None => false,
                }
            };
            if let Some(tx) = self.replace_tx.lock().as_ref() {
                let _ = tx.send(done);
            }
            Ok(done)
        }
        .boxed()
    }
}

/// A verifier over a [`MemSource`] and a [`MemoryThrottleStore`], on a [`ManualClock`].
pub(crate) struct Harness {
    pub v: Verifier,
    pub clock: ManualClock,
    pub source: Arc<MemSource>,
}

pub(crate) fn config() -> VerifierConfig {
    VerifierConfig {
        pool_threads: 2,
        // Exact delays on the manual clock; the jitter has a test of its own (waves.rs).
        reject_jitter_us: 0,
        ..VerifierConfig::default()
    }
}

pub(crate) fn policy(iterations: u32) -> Policy {
    Policy::Pbkdf2 {
        prf: Prf::Sha256,
        iterations,
    }
}

impl Harness {
    pub(crate) fn new(config: VerifierConfig) -> Self {
        Self::with(config, policy(1000), None)
    }

    pub(crate) fn with(config: VerifierConfig, policy: Policy, hook: Option<JobHook>) -> Self {
        let clock = ManualClock::new();
        let source = MemSource::new();
        Self::sharing(config, policy, hook, clock, source)
    }

    /// A harness whose every hash "takes" `hash` of its manual clock: real verifications
    /// then last exactly that long.
    pub(crate) fn hashing_for(config: VerifierConfig, hash: Duration) -> Self {
        let clock = ManualClock::new();
        let c2 = clock.clone();
        let hook: JobHook = Arc::new(move || c2.advance(hash));
        Self::sharing(config, policy(1000), Some(hook), clock, MemSource::new())
    }

    pub(crate) fn sharing(
        config: VerifierConfig,
        policy: Policy,
        hook: Option<JobHook>,
        clock: ManualClock,
        source: Arc<MemSource>,
    ) -> Self {
        let v = Verifier::with_hook(
            config,
            source.clone(),
            Arc::new(MemoryThrottleStore::default()),
            peppers(),
            policy,
            Arc::new(clock.clone()),
            hook,
        )
        .unwrap();
        Harness { v, clock, source }
    }

    pub(crate) fn attempt(&self, principal: &str, secret: &str, ip: &str) -> Attempt {
        self.attempt_kind(PrincipalKind::User, principal, secret, ip)
    }

    pub(crate) fn attempt_kind(
        &self,
        kind: PrincipalKind,
        principal: &str,
        secret: &str,
        ip: &str,
    ) -> Attempt {
        Attempt {
            kind,
            principal: principal.to_owned(),
            secret: Zeroizing::new(secret.as_bytes().to_vec()),
            source: ip.parse::<IpAddr>().unwrap(),
            protocol: Protocol::Other,
            deadline: self.clock.now() + Duration::from_secs(30),
            station: None,
            context: crate::audit::AuditContext {
                request_id: crate::audit::request_id(),
                client_id: None,
                eap: None,
            },
        }
    }
}
