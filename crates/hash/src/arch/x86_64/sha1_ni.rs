//! SHA-1 with the x86 SHA extensions (SHA-NI): a multi-block compression and the fused
//! PBKDF2 loop.
//!
//! SHA-NI keeps a, b, c, d in one register (a in the top lane) and e in the top lane of a
//! second; that is also the layout of the first five message words after the
//! big-endian load, so a digest becomes the next message with one blend against the
//! constant padding word. States, running XOR and message stay in xmm registers for the
//! whole derivation.
//!
//! The message schedule of the PBKDF2 loop is not the `sha1msg1`/`sha1msg2` chain of the
//! multi-block code. Each `sha1msg2` needs the previous group of four words, and its
//! latency (about 6 cycles on Intel cores, against 4 for `sha1rnds4`) sets the pace of the
//! whole compression when the message depends on the previous digest, as it does here:
//! the schedule cannot run ahead the way it does over a long message. So only words
//! 16..31 come from that chain; words 32..63 use the equivalent recurrence
//! `W[t] = (W[t-6] ^ W[t-16] ^ W[t-28] ^ W[t-32]) <<< 2` and words 64..79
//! `W[t] = (W[t-12] ^ W[t-32] ^ W[t-56] ^ W[t-64]) <<< 4` (both follow from applying the
//! definition twice and four times; Intel's SSE SHA-1 implementation uses the first),
//! whose dependencies reach two and three groups back and take only plain SSE
//! instructions. This brings the loop to within a few percent of the raw compression
//! rate on Intel.

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_blend_epi16, _mm_extract_epi32, _mm_loadu_si128,
    _mm_or_si128, _mm_set_epi32, _mm_set_epi64x, _mm_setzero_si128, _mm_sha1msg1_epu32,
    _mm_sha1msg2_epu32, _mm_sha1nexte_epu32, _mm_sha1rnds4_epu32, _mm_shuffle_epi8, _mm_slli_epi32,
    _mm_srli_epi32, _mm_xor_si128,
};

/// Signature of the PBKDF2 loop: (inner state, outer state, U_1 in / XOR out, iterations).
pub(crate) type LoopFn = fn(&[u32; 5], &[u32; 5], &mut [u32; 5], u32);
/// Signature of the multi-block compression (whole 64-byte blocks only).
pub(crate) type BlocksFn = fn(&mut [u32; 5], &[u8]);

/// The SHA-NI kernels, if this CPU has SHA-NI.
pub(crate) fn detect() -> Option<(LoopFn, BlocksFn)> {
    if super::has_sha_ni() {
        Some((pbkdf2_loop, compress_blocks))
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn pbkdf2_loop(istate: &[u32; 5], ostate: &[u32; 5], acc: &mut [u32; 5], iterations: u32) {
    // SAFETY: this function is private and its address escapes only from `detect`, after
    // `has_sha_ni` confirmed sha, sse2, ssse3 and sse4.1, the features `loop_ni` enables.
    unsafe { loop_ni(istate, ostate, acc, iterations) }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn compress_blocks(state: &mut [u32; 5], data: &[u8]) {
    // SAFETY: as for `pbkdf2_loop`: only reachable after `detect` checked the features.
    unsafe { blocks_ni(state, data) }
}

macro_rules! rounds4 {
    ($h0:ident, $h1:ident, $wk:expr, $i:expr) => {
        _mm_sha1rnds4_epu32($h0, _mm_sha1nexte_epu32($h1, $wk), $i)
    };
}

macro_rules! schedule_rounds4 {
    ($h0:ident, $h1:ident, $w0:ident, $w1:ident, $w2:ident, $w3:ident, $w4:ident, $i:expr) => {
        $w4 = _mm_sha1msg2_epu32(_mm_xor_si128(_mm_sha1msg1_epu32($w0, $w1), $w2), $w3);
        $h1 = rounds4!($h0, $h1, $w4, $i);
    };
}

/// One compression of the message `$m0..$m3` into `$abcd`/`$e` (e in the top lane).
macro_rules! compress {
    ($abcd:ident, $e:ident, $m0:expr, $m1:expr, $m2:expr, $m3:expr) => {{
        let (mut w0, mut w1, mut w2, mut w3) = ($m0, $m1, $m2, $m3);
        let mut w4;
        let mut h0 = $abcd;
        let mut h1 = _mm_add_epi32($e, w0);
        // Rounds 0..20
        h1 = _mm_sha1rnds4_epu32(h0, h1, 0);
        h0 = rounds4!(h1, h0, w1, 0);
        h1 = rounds4!(h0, h1, w2, 0);
        h0 = rounds4!(h1, h0, w3, 0);
        schedule_rounds4!(h0, h1, w0, w1, w2, w3, w4, 0);
        // Rounds 20..40
        schedule_rounds4!(h1, h0, w1, w2, w3, w4, w0, 1);
        schedule_rounds4!(h0, h1, w2, w3, w4, w0, w1, 1);
        schedule_rounds4!(h1, h0, w3, w4, w0, w1, w2, 1);
        schedule_rounds4!(h0, h1, w4, w0, w1, w2, w3, 1);
        schedule_rounds4!(h1, h0, w0, w1, w2, w3, w4, 1);
        // Rounds 40..60
        schedule_rounds4!(h0, h1, w1, w2, w3, w4, w0, 2);
        schedule_rounds4!(h1, h0, w2, w3, w4, w0, w1, 2);
        schedule_rounds4!(h0, h1, w3, w4, w0, w1, w2, 2);
        schedule_rounds4!(h1, h0, w4, w0, w1, w2, w3, 2);
        schedule_rounds4!(h0, h1, w0, w1, w2, w3, w4, 2);
        // Rounds 60..80
        schedule_rounds4!(h1, h0, w1, w2, w3, w4, w0, 3);
        schedule_rounds4!(h0, h1, w2, w3, w4, w0, w1, 3);
        schedule_rounds4!(h1, h0, w3, w4, w0, w1, w2, 3);
        schedule_rounds4!(h0, h1, w4, w0, w1, w2, w3, 3);
        schedule_rounds4!(h1, h0, w0, w1, w2, w3, w4, 3);
        let _ = (w1, w2, w3);
        $abcd = _mm_add_epi32($abcd, h0);
        $e = _mm_sha1nexte_epu32(h1, $e);
    }};
}

/// Every lane rotated left by `$n` bits.
macro_rules! rol {
    ($x:expr, $n:literal) => {
        _mm_or_si128(_mm_slli_epi32($x, $n), _mm_srli_epi32($x, 32 - $n))
    };
}

/// One compression of a PBKDF2 message (`$m0`, `$m1` from the previous digest, then
/// zeros and the length) into `$abcd`/`$e`; `$first` is `$e + $m0`, which the caller may
/// have computed with fewer steps on the critical path. Schedule as in the module doc.
macro_rules! compress_pbkdf2 {
    ($abcd:ident, $e:ident, $m0:expr, $m1:expr, $pad3:expr, $first:expr) => {{
        let zero = _mm_setzero_si128();
        let mut w = [zero; 20];
        w[0] = $m0;
        w[1] = $m1;
        w[3] = $pad3;
        for g in 4..8 {
            w[g] = _mm_sha1msg2_epu32(
                _mm_xor_si128(_mm_sha1msg1_epu32(w[g - 4], w[g - 3]), w[g - 2]),
                w[g - 1],
            );
        }
        for g in 8..16 {
            let far = _mm_xor_si128(w[g - 4], _mm_xor_si128(w[g - 7], w[g - 8]));
            let x = _mm_xor_si128(far, _mm_alignr_epi8(w[g - 2], w[g - 1], 8));
            w[g] = rol!(x, 2);
        }
        for g in 16..20 {
            let far = _mm_xor_si128(w[g - 8], _mm_xor_si128(w[g - 14], w[g - 16]));
            w[g] = rol!(_mm_xor_si128(far, w[g - 3]), 4);
        }
        // Group g of four rounds: the newest state (`a`) and the one before (`b`, whose
        // `sha1nexte` folds e into the next message group).
        let mut b = $abcd;
        let mut a = _mm_sha1rnds4_epu32(b, $first, 0);
        macro_rules! group {
            ($g:expr, $f:expr) => {{
                let next = _mm_sha1rnds4_epu32(a, _mm_sha1nexte_epu32(b, w[$g]), $f);
                b = a;
                a = next;
            }};
        }
        group!(1, 0);
        group!(2, 0);
        group!(3, 0);
        group!(4, 0);
        group!(5, 1);
        group!(6, 1);
        group!(7, 1);
        group!(8, 1);
        group!(9, 1);
        group!(10, 2);
        group!(11, 2);
        group!(12, 2);
        group!(13, 2);
        group!(14, 2);
        group!(15, 3);
        group!(16, 3);
        group!(17, 3);
        group!(18, 3);
        group!(19, 3);
        $abcd = _mm_add_epi32($abcd, a);
        $e = _mm_sha1nexte_epu32(b, $e);
    }};
}

/// State words to the (ABCD, E) register pair (a and e in the top lanes, zeros below e).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn to_regs(s: &[u32; 5]) -> (__m128i, __m128i) {
    let w = s.map(|x| x as i32);
    (
        _mm_set_epi32(w[0], w[1], w[2], w[3]),
        _mm_set_epi32(w[4], 0, 0, 0),
    )
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn from_regs(abcd: __m128i, e: __m128i) -> [u32; 5] {
    [
        _mm_extract_epi32(abcd, 3),
        _mm_extract_epi32(abcd, 2),
        _mm_extract_epi32(abcd, 1),
        _mm_extract_epi32(abcd, 0),
        _mm_extract_epi32(e, 3),
    ]
    .map(|x| x as u32)
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn loop_ni(istate: &[u32; 5], ostate: &[u32; 5], acc: &mut [u32; 5], iterations: u32) {
    let (i_abcd, i_e) = to_regs(istate);
    let (o_abcd, o_e) = to_regs(ostate);
    // Padding of a 64 + 20 byte message: word 5 is 0x80000000, word 15 the bit length 672.
    // Message registers hold the first word of each group of four in the top lane.
    let pad1 = _mm_set_epi32(0, 0x8000_0000_u32 as i32, 0, 0);
    let pad3 = _mm_set_epi32(0, 0, 0, 672);
    let (mut abcd, mut e) = to_regs(acc);
    let (mut x_abcd, mut x_e) = (abcd, e);
    for _ in 1..iterations {
        // The digest (a..e) is message words 0..4: abcd as is, e over the padding word.
        let m1 = _mm_blend_epi16(pad1, e, 0xC0);
        let m0 = abcd;
        abcd = i_abcd;
        e = i_e;
        compress_pbkdf2!(abcd, e, m0, m1, pad3, _mm_add_epi32(i_e, m0));
        let m1 = _mm_blend_epi16(pad1, e, 0xC0);
        let m0 = abcd;
        abcd = o_abcd;
        e = o_e;
        compress_pbkdf2!(abcd, e, m0, m1, pad3, _mm_add_epi32(o_e, m0));
        x_abcd = _mm_xor_si128(x_abcd, abcd);
        x_e = _mm_xor_si128(x_e, e);
    }
    *acc = from_regs(x_abcd, x_e);
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn blocks_ni(state: &mut [u32; 5], data: &[u8]) {
    // Big-endian words, first word in the top lane: reverse all sixteen bytes.
    let mask = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0A0B_0C0D_0E0F);
    let (mut abcd, mut e) = to_regs(state);
    for block in data.chunks_exact(64) {
        let mut m = [_mm_setzero_si128(); 4];
        for (m, part) in m.iter_mut().zip(block.chunks_exact(16)) {
            // SAFETY: `part` is exactly 16 readable bytes and `loadu` has no alignment
            // requirement.
            *m = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(part.as_ptr().cast()) }, mask);
        }
        compress!(abcd, e, m[0], m[1], m[2], m[3]);
    }
    *state = from_regs(abcd, e);
}
