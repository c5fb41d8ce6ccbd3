//! The hash work of one batch: one `batch::derive` call where the jobs share PBKDF2
//! parameters, else each job's credentials one after another (argon2 lending its lanes to
//! idle workers).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use portcullis_hash::argon2_kernel::{LaneExecutor, LaneWork, Lent, Serial};
use portcullis_hash::{Credential, batch};
use zeroize::Zeroizing;

use super::{Shared, VerifyJob};
use crate::attempt::Class;

impl Shared {
    /// Derive and compare; `(matched index, error)` per job, and whether the jobs ran as
    /// one batch call.
    pub(super) fn compute(
        &self,
        batch: &[(VerifyJob, Class)],
    ) -> (Vec<(Option<usize>, bool)>, bool) {
        if batch.len() >= 2
            && let Some(r) = self.compute_batch(batch)
        {
            return (r, true);
        }
        let peppers = Arc::clone(&self.peppers.read());
        let lend = Lent(|work: LaneWork| self.lend(work));
        let lanes: &dyn LaneExecutor = if self.threads > 1 { &lend } else { &Serial };
        let results = batch
            .iter()
            .map(|(job, _)| {
                let mut error = false;
                for (i, c) in job.creds.iter().enumerate() {
                    self.hashes.fetch_add(1, Ordering::Relaxed);
                    match c.verify_lanes(&job.secret, &peppers, lanes) {
                        Ok(true) => return (Some(i), error),
                        Ok(false) => {}
                        Err(_) => error = true,
                    }
                }
                (None, error)
            })
            .collect();
        (results, false)
    }

    /// Make the lanes of one argon2 slice visible to idle workers and wake as many as
    /// could help (a wake-up taken by a worker gathering a batch only costs parallelism:
    /// the lending thread runs whatever nobody picked up).
    fn lend(&self, work: LaneWork) {
        let mut st = self.state.lock();
        while st.lanes.front().is_some_and(LaneWork::exhausted) {
            st.lanes.pop_front();
        }
        let wake = st.idle;
        st.lanes.push_back(work);
        drop(st);
        for _ in 0..wake.min(self.threads - 1) {
            self.work.notify_one();
        }
    }

    /// One `batch::derive` call for jobs that each hold one PBKDF2 credential with the
    /// same parameters; `None` if they do not (then the caller derives them singly).
    fn compute_batch(&self, batch: &[(VerifyJob, Class)]) -> Option<Vec<(Option<usize>, bool)>> {
        let key = batch[0].0.key?;
        let mut parts = Vec::with_capacity(batch.len());
        for (job, _) in batch {
            match job.creds.as_slice() {
                [Credential::Pbkdf2 { salt, hash, .. }] if job.key == Some(key) => {
                    parts.push((job.secret.as_slice(), salt.as_slice(), hash.as_slice()));
                }
                _ => return None,
            }
        }
        let mut outs: Vec<Zeroizing<Vec<u8>>> = parts
            .iter()
            .map(|(_, _, h)| Zeroizing::new(vec![0u8; h.len()]))
            .collect();
        let mut jobs: Vec<batch::Job<'_>> = parts
            .iter()
            .zip(outs.iter_mut())
            .map(|((pw, salt, _), out)| batch::Job {
                password: pw,
                salt,
                out: out.as_mut_slice(),
            })
            .collect();
        self.hashes.fetch_add(batch.len() as u64, Ordering::Relaxed);
        batch::derive(key.prf, key.iterations, &mut jobs);
        drop(jobs);
        Some(
            parts
                .iter()
                .zip(outs.iter())
                .map(|((_, _, h), out)| (portcullis_hash::ct_eq(out, h).then_some(0), false))
                .collect(),
        )
    }
}
