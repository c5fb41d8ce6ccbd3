//! The PBKDF2-HMAC driver shared by the three hashes: HMAC key setup (the inner and outer
//! states are compressed once per password), the first U of each output block, and the
//! hand-off to a backend's iteration loop, which does exactly two compressions per
//! iteration on a message block whose padding is laid out once.
//!
//! Nothing here allocates; key material on the stack is zeroized when dropped.

use zeroize::Zeroize;

use super::Backend;
use super::soft;

/// One SHA function as the driver sees it: block and digest sizes, initial state, and the
/// backends (selected once per derivation).
pub(crate) trait Sha {
    /// Compression state (the chaining value).
    type State: Copy + Zeroize;
    /// Block size in bytes (64 or 128).
    const BLOCK: usize;
    /// Digest size in bytes.
    const OUT: usize;
    /// Size of the big-endian bit-length field that ends the padding.
    const LEN_FIELD: usize;
    /// Initial state.
    const IV: Self::State;
    /// The kernel for `backend` on this CPU: iteration loop, multi-block compression and a
    /// name for reports.
    fn kernel(backend: Backend) -> Kernel<Self::State>;
    /// Write the first `out.len()` (at most [`Sha::OUT`]) bytes of the big-endian digest.
    fn digest_bytes(state: &Self::State, out: &mut [u8]);
}

/// A backend's functions for one hash.
pub(crate) struct Kernel<S> {
    /// PBKDF2 iterations 2..=c: (inner state, outer state, U_1 in / XOR out, c).
    pub(crate) iterate: fn(&S, &S, &mut S, u32),
    /// Compression of every whole block of a byte slice.
    pub(crate) blocks: fn(&mut S, &[u8]),
    /// Backend name for reports (`sha-ni`, `portable`, ...).
    pub(crate) name: &'static str,
}

/// Incremental hashing from a given state (used for the key, the salt and U_1 only).
struct Stream<'k, H: Sha> {
    kernel: &'k Kernel<H::State>,
    state: H::State,
    buf: [u8; 128],
    buffered: usize,
    total: u64,
}

impl<'k, H: Sha> Stream<'k, H> {
    /// Start from `state`, as if `already` bytes had been hashed to reach it.
    fn new(kernel: &'k Kernel<H::State>, state: H::State, already: u64) -> Self {
        Stream {
            kernel,
            state,
            buf: [0; 128],
            buffered: 0,
            total: already,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        self.total = self.total.wrapping_add(data.len() as u64);
        if self.buffered > 0 {
            let take = (H::BLOCK - self.buffered).min(data.len());
            self.buf[self.buffered..self.buffered + take].copy_from_slice(&data[..take]);
            self.buffered += take;
            data = &data[take..];
            if self.buffered < H::BLOCK {
                return;
            }
            (self.kernel.blocks)(&mut self.state, &self.buf[..H::BLOCK]);
            self.buffered = 0;
        }
        let whole = data.len() - data.len() % H::BLOCK;
        (self.kernel.blocks)(&mut self.state, &data[..whole]);
        let rest = &data[whole..];
        self.buf[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    /// Pad and return the final state.
    fn finish(mut self) -> H::State {
        let bits = self.total.wrapping_mul(8);
        let n = self.buffered;
        self.buf[n] = 0x80;
        self.buf[n + 1..].fill(0);
        if n + 1 > H::BLOCK - H::LEN_FIELD {
            (self.kernel.blocks)(&mut self.state, &self.buf[..H::BLOCK]);
            self.buf.fill(0);
        }
        self.buf[H::BLOCK - 8..H::BLOCK].copy_from_slice(&bits.to_be_bytes());
        (self.kernel.blocks)(&mut self.state, &self.buf[..H::BLOCK]);
        self.state
    }
}

impl<H: Sha> Drop for Stream<'_, H> {
    fn drop(&mut self) {
        self.buf.zeroize();
        self.state.zeroize();
    }
}

/// Backend name `H` would use for `backend` on this CPU.
pub(crate) fn backend_name<H: Sha>(backend: Backend) -> &'static str {
    H::kernel(backend).name
}

/// PBKDF2-HMAC-`H`; `iterations` 0 counts as 1.
pub(crate) fn derive<H: Sha>(
    backend: Backend,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
) {
    derive_with::<H>(&H::kernel(backend), password, salt, iterations, out);
}

/// [`derive`] on a given kernel.
fn derive_with<H: Sha>(
    kernel: &Kernel<H::State>,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    out: &mut [u8],
) {
    let iterations = iterations.max(1);

    // HMAC key: the password, or its digest if longer than a block, zero-padded.
    let mut key = [0u8; 128];
    if password.len() > H::BLOCK {
        let mut s = Stream::<H>::new(kernel, H::IV, 0);
        s.update(password);
        let mut d = s.finish();
        H::digest_bytes(&d, &mut key[..H::OUT]);
        d.zeroize();
    } else {
        key[..password.len()].copy_from_slice(password);
    }
    let mut pad = [0u8; 128];
    let mut istate = H::IV;
    let mut ostate = H::IV;
    for (p, k) in pad.iter_mut().zip(&key).take(H::BLOCK) {
        *p = k ^ 0x36;
    }
    (kernel.blocks)(&mut istate, &pad[..H::BLOCK]);
    for (p, k) in pad.iter_mut().zip(&key).take(H::BLOCK) {
        *p = k ^ 0x5c;
    }
    (kernel.blocks)(&mut ostate, &pad[..H::BLOCK]);
    key.zeroize();
    pad.zeroize();

    let mut digest = [0u8; 64];
    for (index, chunk) in out.chunks_mut(H::OUT).enumerate() {
        // RFC 8018 block index INT(i), big-endian from 1. Outputs of 2^32 - 1 blocks
        // (over 80 GB) are beyond any caller; the index would wrap there.
        let block_index = (index as u32).wrapping_add(1);
        let mut inner = Stream::<H>::new(kernel, istate, H::BLOCK as u64);
        inner.update(salt);
        inner.update(&block_index.to_be_bytes());
        let mut u = inner.finish();
        H::digest_bytes(&u, &mut digest[..H::OUT]);
        let mut outer = Stream::<H>::new(kernel, ostate, H::BLOCK as u64);
        outer.update(&digest[..H::OUT]);
        u = outer.finish();
        (kernel.iterate)(&istate, &ostate, &mut u, iterations);
        H::digest_bytes(&u, chunk);
        u.zeroize();
    }
    digest.zeroize();
    istate.zeroize();
    ostate.zeroize();
}

/// SHA-1.
pub(crate) struct Sha1;
/// SHA-256.
pub(crate) struct Sha256;
/// SHA-512.
pub(crate) struct Sha512;

impl Sha for Sha1 {
    type State = [u32; 5];
    const BLOCK: usize = 64;
    const OUT: usize = 20;
    const LEN_FIELD: usize = 8;
    const IV: [u32; 5] = soft::IV1;

    fn kernel(backend: Backend) -> Kernel<[u32; 5]> {
        #[cfg(target_arch = "x86_64")]
        if backend == Backend::Auto
            && let Some((iterate, blocks)) = crate::arch::x86_64::sha1_ni::detect()
        {
            return Kernel {
                iterate,
                blocks,
                name: "sha-ni",
            };
        }
        let _ = backend;
        Kernel {
            iterate: |i, o, acc, c| soft::iterate1(i, o, acc, c),
            blocks: |s, d| soft::blocks1(s, d),
            name: "portable",
        }
    }

    fn digest_bytes(state: &[u32; 5], out: &mut [u8]) {
        put_be32(state, out);
    }
}

impl Sha for Sha256 {
    type State = [u32; 8];
    const BLOCK: usize = 64;
    const OUT: usize = 32;
    const LEN_FIELD: usize = 8;
    const IV: [u32; 8] = soft::IV256;

    fn kernel(backend: Backend) -> Kernel<[u32; 8]> {
        #[cfg(target_arch = "x86_64")]
        if backend == Backend::Auto
            && let Some((iterate, blocks)) = crate::arch::x86_64::sha256_ni::detect()
        {
            return Kernel {
                iterate,
                blocks,
                name: "sha-ni",
            };
        }
        let _ = backend;
        Kernel {
            iterate: |i, o, acc, c| soft::iterate256(i, o, acc, c),
            blocks: |s, d| soft::blocks256(s, d),
            name: "portable",
        }
    }

    fn digest_bytes(state: &[u32; 8], out: &mut [u8]) {
        put_be32(state, out);
    }
}

impl Sha for Sha512 {
    type State = [u64; 8];
    const BLOCK: usize = 128;
    const OUT: usize = 64;
    const LEN_FIELD: usize = 16;
    const IV: [u64; 8] = soft::IV512;

    fn kernel(backend: Backend) -> Kernel<[u64; 8]> {
        #[cfg(target_arch = "x86_64")]
        if backend == Backend::Auto {
            if let Some((iterate, blocks)) = crate::arch::x86_64::sha512_vl::detect() {
                return Kernel {
                    iterate,
                    blocks,
                    name: "avx512vl-schedule",
                };
            }
            if let Some((iterate, blocks)) = crate::arch::x86_64::sha512_bmi2::detect() {
                return Kernel {
                    iterate,
                    blocks,
                    name: "scalar-bmi2",
                };
            }
        }
        let _ = backend;
        Kernel {
            iterate: |i, o, acc, c| soft::iterate512(i, o, acc, c),
            blocks: |s, d| soft::blocks512(s, d),
            name: "portable",
        }
    }

    fn digest_bytes(state: &[u64; 8], out: &mut [u8]) {
        for (w, o) in state.iter().zip(out.chunks_mut(8)) {
            o.copy_from_slice(&w.to_be_bytes()[..o.len()]);
        }
    }
}

fn put_be32(words: &[u32], out: &mut [u8]) {
    for (w, o) in words.iter().zip(out.chunks_mut(4)) {
        o.copy_from_slice(&w.to_be_bytes()[..o.len()]);
    }
}

/// Compress every whole block of `data` from the initial state on `backend` (the raw
/// compression rate, for benchmarks); returns the first state word so the work is used.
pub(crate) fn raw_blocks<H: Sha>(backend: Backend, data: &[u8]) -> H::State {
    let kernel = H::kernel(backend);
    let mut state = H::IV;
    (kernel.blocks)(&mut state, data);
    state
}

#[cfg(test)]
mod tests {
    //! Every kernel this CPU can run (not only the one `Auto` picks) against RustCrypto.

    use super::*;

    /// What an arch module's `detect()` returns.
    type Detected<S> = Option<(fn(&S, &S, &mut S, u32), fn(&mut S, &[u8]))>;

    fn kernels<S>(found: &[Detected<S>]) -> Vec<Kernel<S>> {
        found
            .iter()
            .flatten()
            .map(|&(iterate, blocks)| Kernel {
                iterate,
                blocks,
                name: "arch",
            })
            .collect()
    }

    fn check<H: Sha>(kernels: Vec<Kernel<H::State>>, reference: fn(&[u8], &[u8], u32, &mut [u8])) {
        let password: Vec<u8> = (0..200u8).collect();
        for kernel in &kernels {
            for (plen, slen, c, len) in [
                (0, 0, 1, 1),
                (3, 16, 2, 33),
                (200, 100, 1000, 130),
                (129, 55, 77, 64),
            ] {
                let mut want = vec![0u8; len];
                reference(&password[..plen], &password[..slen], c, &mut want);
                let mut got = vec![0u8; len];
                derive_with::<H>(kernel, &password[..plen], &password[..slen], c, &mut got);
                assert_eq!(got, want, "plen {plen} slen {slen} c {c} len {len}");
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn issue_2_every_detected_kernel_matches_rustcrypto() {
        use crate::arch::x86_64::{sha1_ni, sha256_ni, sha512_bmi2, sha512_vl};
        check::<Sha1>(
            kernels(&[sha1_ni::detect()]),
            pbkdf2::pbkdf2_hmac::<sha1::Sha1>,
        );
        check::<Sha256>(
            kernels(&[sha256_ni::detect()]),
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>,
        );
        check::<Sha512>(
            kernels(&[sha512_bmi2::detect(), sha512_vl::detect()]),
            pbkdf2::pbkdf2_hmac::<sha2::Sha512>,
        );
    }
}
