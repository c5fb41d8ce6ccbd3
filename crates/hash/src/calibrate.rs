//! `portcullis hash calibrate`: measure each KDF on this machine and suggest the policy
//! parameters that make one verification take about a target time on one core.
//!
//! Each algorithm is probed at a small cost (best of three runs, after a warm-up so the
//! argon2 block buffer is already faulted in, as it is in the hash pool), the time scales
//! linearly in the cost parameter, and the suggestion is measured once more at full cost.
//! The whole run takes roughly four times the target plus a few hundred milliseconds.
//! The probe times also give the [`crate::credential::cost_model`] constants (work units
//! per KDF step relative to one SHA-256 compression), reported in [`UnitTimes`].

use std::time::{Duration, Instant};

use crate::formats::argon2::{self, Argon2Variant};
use crate::formats::{bcrypt, limits, scrypt};
use crate::pbkdf2::{self, Prf};
use crate::policy::{OUTPUT_LEN, Policy, SALT_LEN};

/// One suggested policy with its measured verification time.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The suggested policy (valid: [`Policy::validate`] accepts it).
    pub policy: Policy,
    /// Time of one hash at these parameters, measured on this machine.
    pub measured: Duration,
    /// Whether the parameters meet OWASP's 2023 minimums (pbkdf2-sha256 600,000;
    /// argon2id m*t >= 7 MiB * 5; bcrypt 10; scrypt N=2^17, r=8). A `false` means the target
    /// time is too low for this machine to give that much protection.
    pub meets_owasp_minimum: bool,
}

/// Measured time of each KDF's unit of work on this machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitTimes {
    /// One SHA-256 compression (half a PBKDF2-SHA256 iteration).
    pub sha256_compression: Duration,
    /// One argon2 1 KiB block per pass.
    pub argon2_block_pass: Duration,
    /// One bcrypt round (of 2^cost).
    pub bcrypt_round: Duration,
    /// One scrypt N*r*p step.
    pub scrypt_nrp: Duration,
}

impl UnitTimes {
    /// Work units ([`crate::Cost::Work`]) per argon2 block-pass, bcrypt round and scrypt
    /// step, as `(argon2, bcrypt, scrypt)`.
    pub fn work_units(&self) -> (f64, f64, f64) {
        let c = self.sha256_compression.as_secs_f64().max(1e-12);
        (
            self.argon2_block_pass.as_secs_f64() / c,
            self.bcrypt_round.as_secs_f64() / c,
            self.scrypt_nrp.as_secs_f64() / c,
        )
    }
}

/// Result of [`calibrate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The requested time per verification.
    pub target: Duration,
    /// pbkdf2-sha256, argon2id, bcrypt and scrypt suggestions, in that order.
    pub suggestions: Vec<Suggestion>,
    /// Per-unit times behind the suggestions.
    pub units: UnitTimes,
}

/// Calibration could not run.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CalibrateError {
    /// Target outside 1 ms ..= 10 s.
    #[error("target must be between 1 and 10000 ms")]
    Target,
    /// A KDF failed at the probe parameters.
    #[error("{0}")]
    Kdf(String),
}

const PASSWORD: &[u8] = b"calibration password";
const SALT: [u8; SALT_LEN] = [0x5a; SALT_LEN];

fn best_of<F: FnMut() -> Result<(), CalibrateError>>(
    runs: usize,
    mut f: F,
) -> Result<Duration, CalibrateError> {
    f()?; // warm-up: caches, argon2's thread-local buffer
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}

fn kdf<E: std::fmt::Display>(e: E) -> CalibrateError {
    CalibrateError::Kdf(e.to_string())
}

fn pbkdf2_time(iterations: u32) -> Result<Duration, CalibrateError> {
    let mut out = [0u8; OUTPUT_LEN];
    best_of(3, || {
        pbkdf2::pbkdf2_hmac(Prf::Sha256, PASSWORD, &SALT, iterations, &mut out);
        Ok(())
    })
}

fn argon2_time(m: u32, t: u32) -> Result<Duration, CalibrateError> {
    let mut out = [0u8; OUTPUT_LEN];
    best_of(3, || {
        argon2::derive(
            Argon2Variant::Id,
            0x13,
            (m, t, 1),
            PASSWORD,
            &SALT,
            &mut out,
            &crate::argon2_kernel::Serial,
        )
        .map_err(kdf)
    })
}

fn bcrypt_time(cost: u32) -> Result<Duration, CalibrateError> {
    best_of(3, || {
        bcrypt::raw(cost, SALT, PASSWORD).map(|_| ()).map_err(kdf)
    })
}

fn scrypt_time(log_n: u8, r: u32) -> Result<Duration, CalibrateError> {
    let mut out = [0u8; OUTPUT_LEN];
    best_of(3, || {
        scrypt::derive(log_n, r, 1, PASSWORD, &SALT, &mut out).map_err(kdf)
    })
}

/// Measure and suggest parameters for `target` per verification (see the module doc).
pub fn calibrate(target: Duration) -> Result<Calibration, CalibrateError> {
    if target < Duration::from_millis(1) || target > Duration::from_secs(10) {
        return Err(CalibrateError::Target);
    }
    let goal = target.as_secs_f64();
    let mut suggestions = Vec::new();

    // PBKDF2-SHA256: two compressions per iteration.
    let probe_iter = 20_000u32;
    let per_iter = pbkdf2_time(probe_iter)?.as_secs_f64() / f64::from(probe_iter);
    let to_iterations = |x: f64| {
        (x as u64 / 1000 * 1000).clamp(1000, u64::from(limits::MAX_PBKDF2_ITERATIONS)) as u32
    };
    let mut iterations = to_iterations(goal / per_iter);
    let mut measured = pbkdf2_time(iterations)?;
    // Time is not perfectly linear (caches, frequency, other load): refine twice at most.
    for _ in 0..2 {
        let ratio = goal / measured.as_secs_f64();
        if (0.85..=1.15).contains(&ratio) {
            break;
        }
        iterations = to_iterations(f64::from(iterations) * ratio);
        measured = pbkdf2_time(iterations)?;
    }
    suggestions.push(Suggestion {
        policy: Policy::Pbkdf2 {
            prf: Prf::Sha256,
            iterations,
        },
        measured,
        meets_owasp_minimum: iterations >= 600_000,
    });

    // Argon2id, p=1 (the pool supplies parallelism across requests): t=2 and memory scaled
    // to the target; beyond 1 GiB, more passes instead; below 19 MiB at t=2, t=1.
    let probe_m = 8192u32;
    let per_block = argon2_time(probe_m, 1)?.as_secs_f64() / f64::from(probe_m);
    let blocks = (goal / per_block) as u64;
    let (m, t) = if blocks / 2 >= 19_456 {
        let m = (blocks / 2).min(1 << 20);
        (m, (blocks / m).max(2))
    } else {
        (blocks.max(64), 1)
    };
    let round_m = |m: u64| (if m >= 1024 { m / 1024 * 1024 } else { m }).clamp(64, 1 << 20) as u32;
    let mut m = round_m(m);
    let t = t.min(limits::MAX_ARGON2_WORK / u64::from(m)) as u32;
    let mut measured = argon2_time(m, t)?;
    // Large memory runs slower per block than the cached probe: rescale the memory.
    for _ in 0..2 {
        let ratio = goal / measured.as_secs_f64();
        if (0.85..=1.15).contains(&ratio) {
            break;
        }
        m = round_m((f64::from(m) * ratio) as u64);
        measured = argon2_time(m, t)?;
    }
    suggestions.push(Suggestion {
        policy: Policy::Argon2id { m, t, p: 1 },
        measured,
        meets_owasp_minimum: m >= 7_168 && u64::from(m) * u64::from(t) >= 7_168 * 5,
    });

    // bcrypt: the largest cost not above the target.
    let probe_cost = 6u32;
    let per_round = bcrypt_time(probe_cost)?.as_secs_f64() / f64::from(1u32 << probe_cost);
    let mut cost = (goal / per_round)
        .log2()
        .floor()
        .clamp(4.0, f64::from(limits::MAX_BCRYPT_COST)) as u32;
    let mut measured = bcrypt_time(cost)?;
    if measured.as_secs_f64() > goal * 1.1 && cost > 4 {
        cost -= 1;
        measured = bcrypt_time(cost)?;
    }
    suggestions.push(Suggestion {
        policy: Policy::Bcrypt { cost },
        measured,
        meets_owasp_minimum: cost >= 10,
    });

    // scrypt, r=8 p=1: the largest N not above the target (and within the memory limit).
    let probe_log_n = 12u8;
    let per_nr = scrypt_time(probe_log_n, 8)?.as_secs_f64() / f64::from(8u32 << probe_log_n);
    let mut log_n = (goal / (per_nr * 8.0)).log2().floor().clamp(4.0, 24.0) as u8;
    let mut measured = scrypt_time(log_n, 8)?;
    if measured.as_secs_f64() > goal * 1.1 && log_n > 4 {
        log_n -= 1;
        measured = scrypt_time(log_n, 8)?;
    }
    suggestions.push(Suggestion {
        policy: Policy::Scrypt { log_n, r: 8, p: 1 },
        measured,
        meets_owasp_minimum: log_n >= 17,
    });

    for s in &suggestions {
        s.policy.validate().map_err(kdf)?;
    }
    Ok(Calibration {
        target,
        suggestions,
        units: UnitTimes {
            sha256_compression: Duration::from_secs_f64(per_iter / 2.0),
            argon2_block_pass: Duration::from_secs_f64(per_block),
            bcrypt_round: Duration::from_secs_f64(per_round),
            scrypt_nrp: Duration::from_secs_f64(per_nr),
        },
    })
}

impl Policy {
    /// This policy as the `[hash]` config section lines of [`crate::PolicyConfig`].
    pub fn to_config_toml(&self) -> String {
        match self {
            Policy::Pbkdf2 { prf, iterations } => {
                format!(
                    "algorithm = \"pbkdf2-{}\"\niterations = {iterations}\n",
                    prf.name()
                )
            }
            Policy::Argon2id { m, t, p } => format!(
                "algorithm = \"argon2id\"\nmemory_kib = {m}\ntime_cost = {t}\nparallelism = {p}\n"
            ),
            Policy::Bcrypt { cost } => format!("algorithm = \"bcrypt\"\ncost = {cost}\n"),
            Policy::Scrypt { log_n, r, p } => format!(
                "algorithm = \"scrypt\"\nlog_n = {log_n}\nblock_size = {r}\nparallelism = {p}\n"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_valid_policies_that_round_trip_through_config() {
        let c = calibrate(Duration::from_millis(2)).unwrap();
        assert_eq!(c.suggestions.len(), 4);
        for s in &c.suggestions {
            s.policy.validate().unwrap();
            let cfg: crate::PolicyConfig = toml::from_str(&s.policy.to_config_toml()).unwrap();
            assert_eq!(cfg.into_policy().unwrap(), s.policy);
        }
        assert!(calibrate(Duration::ZERO).is_err());
    }
}
