//! One lane of a batch: one PBKDF2 output block of one job, from HMAC key set-up to the
//! bytes written into the job's output.
//!
//! RFC 8018 computes output block i as `T_i = U_1 ^ ... ^ U_c` with
//! `U_1 = HMAC(P, S || INT(i))` and `U_j = HMAC(P, U_{j-1})`. The blocks of one job share
//! the password but are otherwise independent, so each is its own chain, and so its own lane.
//! `U_1` (the only step that reads the salt, of any length) is computed here; the lane
//! kernels then run the identical-shape iterations 2..=c, two compressions each.

use zeroize::{Zeroize, Zeroizing};

use super::Job;
use super::sha::{Hash, finish, write_be};

/// The state of one chain as the lane kernels see it.
pub(crate) struct Chain<H: Hash> {
    /// State after compressing `key ^ ipad`: every inner compression starts here.
    pub(crate) inner: H::State,
    /// State after compressing `key ^ opad`: every outer compression starts here.
    pub(crate) outer: H::State,
    /// `U_1` when handed to a kernel; `U_1 ^ ... ^ U_c` (the output block) when it returns.
    pub(crate) acc: H::State,
}

impl<H: Hash> core::fmt::Debug for Chain<H> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Key-derived state: never printed.
        f.write_str("Chain(..)")
    }
}

impl<H: Hash> Drop for Chain<H> {
    fn drop(&mut self) {
        self.inner.zeroize();
        self.outer.zeroize();
        self.acc.zeroize();
    }
}

/// HMAC inner and outer states of `password` as key (RFC 2104: keys longer than a block
/// are hashed first; shorter ones are zero-padded).
fn hmac_states<H: Hash>(password: &[u8]) -> (H::State, H::State) {
    let bb = H::BLOCK_BYTES;
    let mut key = Zeroizing::new([0u8; 128]);
    if password.len() > bb {
        let mut digest = finish::<H>(H::IV, 0, &[password]);
        write_be::<H>(&digest, &mut key[..H::out_bytes()]);
        digest.zeroize();
    } else {
        key[..password.len()].copy_from_slice(password);
    }
    let mut words = Zeroizing::new([H::Word::default(); 16]);
    let mut states = [H::IV; 2];
    for (state, pad) in states.iter_mut().zip([0x36u8, 0x5c]) {
        let mut padded = Zeroizing::new([0u8; 128]);
        for (p, k) in padded.iter_mut().zip(key.iter()).take(bb) {
            *p = k ^ pad;
        }
        for (w, chunk) in words
            .iter_mut()
            .zip(padded[..bb].chunks_exact(H::WORD_BYTES))
        {
            *w = H::word_from_be(chunk);
        }
        H::compress(state, &words);
    }
    let [inner, outer] = states;
    (inner, outer)
}

/// Number of output blocks (= chains) a job needs.
pub(crate) fn blocks_of<H: Hash>(job: &Job<'_>) -> usize {
    job.out.len().div_ceil(H::out_bytes())
}

/// Append one chain per output block of each job, in job order then block order, each
/// holding `U_1`.
pub(crate) fn prepare<H: Hash>(jobs: &[Job<'_>], chains: &mut Vec<Chain<H>>) {
    chains.reserve(jobs.iter().map(blocks_of::<H>).sum());
    for job in jobs {
        let blocks = blocks_of::<H>(job);
        if blocks == 0 {
            continue;
        }
        let (inner, outer) = hmac_states::<H>(job.password);
        // RFC 8018 block index INT(i), big-endian from 1. An output of 2^32 - 1 blocks
        // (over 80 GB) is beyond any caller; the index would wrap there.
        for index in 1..=blocks {
            let block_index = (index as u32).to_be_bytes();
            // U_1 = HMAC(P, S || INT(i)): inner hash over the salt, outer over its digest.
            let mut ih = finish::<H>(inner, H::BLOCK_BYTES, &[job.salt, &block_index]);
            let mut digest_bytes = Zeroizing::new([0u8; 64]);
            write_be::<H>(&ih, &mut digest_bytes[..H::out_bytes()]);
            ih.zeroize();
            let u1 = finish::<H>(outer, H::BLOCK_BYTES, &[&digest_bytes[..H::out_bytes()]]);
            chains.push(Chain {
                inner,
                outer,
                acc: u1,
            });
        }
        let (mut inner, mut outer) = (inner, outer);
        inner.zeroize();
        outer.zeroize();
    }
}

/// Write each chain's output block into its job (the inverse of [`prepare`]'s order); the
/// last block of a job is truncated to the requested length.
pub(crate) fn write_out<H: Hash>(chains: &[Chain<H>], jobs: &mut [Job<'_>]) {
    let mut chains = chains.iter();
    for job in jobs.iter_mut() {
        for (chunk, chain) in job.out.chunks_mut(H::out_bytes()).zip(&mut chains) {
            write_be::<H>(&chain.acc, chunk);
        }
    }
}
