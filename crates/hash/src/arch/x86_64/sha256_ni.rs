//! SHA-256 with the x86 SHA extensions (SHA-NI): a multi-block compression (for hashing
//! salts and long keys and for the bench's raw-compression bound) and the fused PBKDF2
//! loop.
//!
//! The PBKDF2 loop keeps the precomputed inner and outer HMAC states, the running XOR and
//! the message in xmm registers for the whole derivation. The states stay in the
//! ABEF/CDGH layout `sha256rnds2` works in; the rounds' output becomes the next message
//! with one `shufps` per half (the message words are the digest words, so no byte
//! swapping is needed), and the feed-forward of the constant HMAC state is added in
//! message layout, folded into the first round constants. The padding words are
//! constants. A compression is one straight line of 32 `sha256rnds2` plus the schedule.
//!
//! Each derivation is one serial chain, so what counts is the latency between the
//! `sha256rnds2`s: the schedule is arranged to stay off that chain (see `schedule!`),
//! and the digest reaches the next compression's first round through two instructions.
//! On Zen 5 the loop measures 133 cycles per compression (`examples/kernel_cycles.rs`)
//! against 128 for the 32 dependent `sha256rnds2` alone.

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_castps_si128, _mm_castsi128_ps, _mm_extract_epi32, _mm_loadu_si128,
    _mm_set_epi32, _mm_set_epi64x, _mm_sha256msg1_epu32, _mm_sha256msg2_epu32,
    _mm_sha256rnds2_epu32, _mm_shuffle_epi8, _mm_shuffle_epi32, _mm_shuffle_ps, _mm_slli_si128,
    _mm_srli_si128, _mm_xor_si128,
};

use crate::pbkdf2::soft::K256;

/// Signature of the PBKDF2 loop: (inner state, outer state, U_1 in / XOR out, iterations).
pub(crate) type LoopFn = fn(&[u32; 8], &[u32; 8], &mut [u32; 8], u32);
/// Signature of the multi-block compression (whole 64-byte blocks only).
pub(crate) type BlocksFn = fn(&mut [u32; 8], &[u8]);

/// The SHA-NI kernels, if this CPU has SHA-NI.
pub(crate) fn detect() -> Option<(LoopFn, BlocksFn)> {
    if super::has_sha_ni() {
        Some((pbkdf2_loop, compress_blocks))
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn pbkdf2_loop(istate: &[u32; 8], ostate: &[u32; 8], acc: &mut [u32; 8], iterations: u32) {
    // SAFETY: this function is private and its address escapes only from `detect`, after
    // `has_sha_ni` confirmed sha, sse2, ssse3 and sse4.1, the features `loop_ni` enables.
    unsafe { loop_ni(istate, ostate, acc, iterations) }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn compress_blocks(state: &mut [u32; 8], data: &[u8]) {
    // SAFETY: as for `pbkdf2_loop`: only reachable after `detect` checked the features.
    unsafe { blocks_ni(state, data) }
}

/// Four rounds with message words `$w` (lane 0 = first word) and constants `K[4*$i..]`.
macro_rules! rounds4 {
    ($abef:ident, $cdgh:ident, $w:expr, $i:expr) => {{
        let k = _mm_set_epi32(
            K256[4 * $i + 3] as i32,
            K256[4 * $i + 2] as i32,
            K256[4 * $i + 1] as i32,
            K256[4 * $i] as i32,
        );
        let kw = _mm_add_epi32($w, k);
        $cdgh = _mm_sha256rnds2_epu32($cdgh, $abef, kw);
        $abef = _mm_sha256rnds2_epu32($abef, $cdgh, _mm_shuffle_epi32(kw, 0x0E));
    }};
}

/// Next four schedule words from the previous sixteen (`$w0` oldest), stored into `$w0`.
///
/// The textbook form is `msg2(msg1(w0, w1) + alignr(w3, w2, 4), w3)`, where w3 (the
/// previous group) reaches the result through alignr, add and msg2: on Zen 5 that chain
/// (10 cycles) is longer than the rounds take per group (8), and the rounds waited for
/// it. Only lane 3 of the alignr comes from w3, and `sha256msg2` adds its first operand's
/// lane 3 into result lane 3 and nowhere else, so that word is added after the msg2:
/// the chain from w3 is msg2 and one add.
macro_rules! schedule {
    ($w0:ident, $w1:ident, $w2:ident, $w3:ident) => {
        $w0 = _mm_add_epi32(
            _mm_sha256msg2_epu32(
                _mm_add_epi32(_mm_sha256msg1_epu32($w0, $w1), _mm_srli_si128($w2, 4)),
                $w3,
            ),
            _mm_slli_si128($w3, 12),
        );
    };
}

/// The 64 rounds of one compression of the message `$m0..$m3` (with `$kw0` = `$m0` plus
/// its round constants) on `$abef`/`$cdgh`, without the feed-forward add: the PBKDF2
/// loop folds its constant HMAC state into the next message instead, and `compress!`
/// adds it. Each schedule
/// group is issued three groups before the rounds that use it, so it is computed while
/// earlier rounds run rather than when the core's schedulers fill up and the front end
/// stalls (measured 2 cycles per compression).
macro_rules! rounds64 {
    ($abef:ident, $cdgh:ident, $kw0:expr, $m0:expr, $m1:expr, $m2:expr, $m3:expr) => {{
        let (mut w0, mut w1, mut w2, mut w3) = ($m0, $m1, $m2, $m3);
        let kw0 = $kw0;
        $cdgh = _mm_sha256rnds2_epu32($cdgh, $abef, kw0);
        $abef = _mm_sha256rnds2_epu32($abef, $cdgh, _mm_shuffle_epi32(kw0, 0x0E));
        schedule!(w0, w1, w2, w3);
        rounds4!($abef, $cdgh, w1, 1);
        schedule!(w1, w2, w3, w0);
        rounds4!($abef, $cdgh, w2, 2);
        schedule!(w2, w3, w0, w1);
        rounds4!($abef, $cdgh, w3, 3);
        schedule!(w3, w0, w1, w2);
        rounds4!($abef, $cdgh, w0, 4);
        schedule!(w0, w1, w2, w3);
        rounds4!($abef, $cdgh, w1, 5);
        schedule!(w1, w2, w3, w0);
        rounds4!($abef, $cdgh, w2, 6);
        schedule!(w2, w3, w0, w1);
        rounds4!($abef, $cdgh, w3, 7);
        schedule!(w3, w0, w1, w2);
        rounds4!($abef, $cdgh, w0, 8);
        schedule!(w0, w1, w2, w3);
        rounds4!($abef, $cdgh, w1, 9);
        schedule!(w1, w2, w3, w0);
        rounds4!($abef, $cdgh, w2, 10);
        schedule!(w2, w3, w0, w1);
        rounds4!($abef, $cdgh, w3, 11);
        schedule!(w3, w0, w1, w2);
        rounds4!($abef, $cdgh, w0, 12);
        rounds4!($abef, $cdgh, w1, 13);
        rounds4!($abef, $cdgh, w2, 14);
        rounds4!($abef, $cdgh, w3, 15);
    }};
}

/// One compression of the message `$m0..$m3` into the state `$abef`/`$cdgh`.
macro_rules! compress {
    ($abef:ident, $cdgh:ident, $m0:expr, $m1:expr, $m2:expr, $m3:expr) => {{
        let (abef0, cdgh0) = ($abef, $cdgh);
        let m0 = $m0;
        let k0 = _mm_set_epi32(
            K256[3] as i32,
            K256[2] as i32,
            K256[1] as i32,
            K256[0] as i32,
        );
        rounds64!($abef, $cdgh, _mm_add_epi32(m0, k0), m0, $m1, $m2, $m3);
        $abef = _mm_add_epi32($abef, abef0);
        $cdgh = _mm_add_epi32($cdgh, cdgh0);
    }};
}

/// The next message, [A, B, C, D] and [E, F, G, H], from the rounds' output in the
/// ABEF = [F, E, B, A] / CDGH = [H, G, D, C] layout (lane 0 first): one `shufps` each.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn to_message(abef: __m128i, cdgh: __m128i) -> (__m128i, __m128i) {
    let (abef, cdgh) = (_mm_castsi128_ps(abef), _mm_castsi128_ps(cdgh));
    (
        _mm_castps_si128(_mm_shuffle_ps(abef, cdgh, 0xBB)),
        _mm_castps_si128(_mm_shuffle_ps(abef, cdgh, 0x11)),
    )
}

/// State words (a..h) to the (ABEF, CDGH) register pair.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn to_regs(s: &[u32; 8]) -> (__m128i, __m128i) {
    let w = s.map(|x| x as i32);
    (
        _mm_set_epi32(w[0], w[1], w[4], w[5]),
        _mm_set_epi32(w[2], w[3], w[6], w[7]),
    )
}

/// The (ABEF, CDGH) register pair back to state words (a..h).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn from_regs(abef: __m128i, cdgh: __m128i) -> [u32; 8] {
    [
        _mm_extract_epi32(abef, 3),
        _mm_extract_epi32(abef, 2),
        _mm_extract_epi32(cdgh, 3),
        _mm_extract_epi32(cdgh, 2),
        _mm_extract_epi32(abef, 1),
        _mm_extract_epi32(abef, 0),
        _mm_extract_epi32(cdgh, 1),
        _mm_extract_epi32(cdgh, 0),
    ]
    .map(|x| x as u32)
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn loop_ni(istate: &[u32; 8], ostate: &[u32; 8], acc: &mut [u32; 8], iterations: u32) {
    let (i_abef, i_cdgh) = to_regs(istate);
    let (o_abef, o_cdgh) = to_regs(ostate);
    // Message layout: lane 0 holds the first word of each group of four.
    let u = acc.map(|x| x as i32);
    let mut m0 = _mm_set_epi32(u[3], u[2], u[1], u[0]);
    let mut m1 = _mm_set_epi32(u[7], u[6], u[5], u[4]);
    let (mut x0, mut x1) = (m0, m1);
    // Padding of a 64 + 32 byte message: 0x80 byte, zeros, bit length 768.
    let pad0 = _mm_set_epi32(0, 0, 0, 0x8000_0000_u32 as i32);
    let pad1 = _mm_set_epi32(768, 0, 0, 0);
    let k0 = _mm_set_epi32(
        K256[3] as i32,
        K256[2] as i32,
        K256[1] as i32,
        K256[0] as i32,
    );
    // The feed-forward of each compression adds its constant HMAC state; in message
    // layout that is a constant, and for the first group it folds into the round
    // constants, so the digest reaches the next compression's first `sha256rnds2` through
    // one shuffle and one add.
    let (i_ff0, i_ff1) = to_message(i_abef, i_cdgh);
    let (o_ff0, o_ff1) = to_message(o_abef, o_cdgh);
    let (i_ffk, o_ffk) = (_mm_add_epi32(i_ff0, k0), _mm_add_epi32(o_ff0, k0));
    let mut kw0 = _mm_add_epi32(m0, k0);
    for _ in 1..iterations {
        let (mut abef, mut cdgh) = (i_abef, i_cdgh);
        rounds64!(abef, cdgh, kw0, m0, m1, pad0, pad1);
        let (r0, r1) = to_message(abef, cdgh);
        kw0 = _mm_add_epi32(r0, i_ffk);
        m0 = _mm_add_epi32(r0, i_ff0);
        m1 = _mm_add_epi32(r1, i_ff1);
        let (mut abef, mut cdgh) = (o_abef, o_cdgh);
        rounds64!(abef, cdgh, kw0, m0, m1, pad0, pad1);
        let (r0, r1) = to_message(abef, cdgh);
        kw0 = _mm_add_epi32(r0, o_ffk);
        m0 = _mm_add_epi32(r0, o_ff0);
        m1 = _mm_add_epi32(r1, o_ff1);
        x0 = _mm_xor_si128(x0, m0);
        x1 = _mm_xor_si128(x1, m1);
    }
    for (i, v) in [x0, x1].into_iter().enumerate() {
        acc[4 * i] = _mm_extract_epi32(v, 0) as u32;
        acc[4 * i + 1] = _mm_extract_epi32(v, 1) as u32;
        acc[4 * i + 2] = _mm_extract_epi32(v, 2) as u32;
        acc[4 * i + 3] = _mm_extract_epi32(v, 3) as u32;
    }
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn blocks_ni(state: &mut [u32; 8], data: &[u8]) {
    // Big-endian words: reverse the bytes within each 32-bit lane.
    let mask = _mm_set_epi64x(
        0x0C0D_0E0F_0809_0A0B_u64 as i64,
        0x0405_0607_0001_0203_u64 as i64,
    );
    let (mut abef, mut cdgh) = to_regs(state);
    for block in data.chunks_exact(64) {
        let mut m = [_mm_set_epi32(0, 0, 0, 0); 4];
        for (m, part) in m.iter_mut().zip(block.chunks_exact(16)) {
            // SAFETY: `part` is exactly 16 readable bytes and `loadu` has no alignment
            // requirement.
            *m = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(part.as_ptr().cast()) }, mask);
        }
        compress!(abef, cdgh, m[0], m[1], m[2], m[3]);
    }
    *state = from_regs(abef, cdgh);
}
