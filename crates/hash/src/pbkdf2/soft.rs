//! Portable (scalar) SHA-1, SHA-256 and SHA-512 compression functions and the PBKDF2
//! iteration loops built on them.
//!
//! The compression functions take the message already as big-endian words and are
//! `#[inline(always)]`: in the PBKDF2 loop the second half of every message block is fixed
//! padding, and once inlined the compiler folds those constant words through the message
//! schedule. The SHA-512 loop here is also what the BMI2 build in `arch` compiles (the
//! same code, with `rorx`/`andn` available) for x86-64 CPUs without AVX-512VL.

#![allow(clippy::many_single_char_names, clippy::unreadable_literal)]

/// SHA-1 initial state.
pub(crate) const IV1: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
/// SHA-256 initial state.
pub(crate) const IV256: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
/// SHA-512 initial state.
pub(crate) const IV512: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// SHA-256 round constants.
pub(crate) const K256: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-512 round constants.
pub(crate) const K512: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];

/// Message schedule step on a 16-word ring buffer (`$w[i & 15]` becomes word `i`).
macro_rules! schedule {
    ($w:ident, $i:expr, $s0:ident, $s1:ident) => {
        if $i >= 16 {
            $w[$i & 15] = $w[$i & 15]
                .wrapping_add($s0($w[($i + 1) & 15]))
                .wrapping_add($w[($i + 9) & 15])
                .wrapping_add($s1($w[($i + 14) & 15]));
        }
    };
}

/// One SHA-2 round; the caller rotates the variable names instead of moving values.
macro_rules! sha2_round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident,
     $w:ident, $k:ident, $i:expr, $ss0:ident, $ss1:ident, $bs0:ident, $bs1:ident) => {
        schedule!($w, $i, $ss0, $ss1);
        let t1 = $h
            .wrapping_add($bs1($e))
            .wrapping_add(($e & $f) ^ (!$e & $g))
            .wrapping_add($k[$i])
            .wrapping_add($w[$i & 15]);
        let t2 = $bs0($a).wrapping_add(($a & $b) ^ ($a & $c) ^ ($b & $c));
        $d = $d.wrapping_add(t1);
        $h = t1.wrapping_add(t2);
    };
}

/// Eight SHA-2 rounds starting at round `$i`.
macro_rules! sha2_round8 {
    ($s:tt, $w:ident, $k:ident, $i:expr) => {
        sha2_round8!(@ $s, $w, $k, $i);
    };
    (@ [$a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident,
        $ss0:ident, $ss1:ident, $bs0:ident, $bs1:ident], $w:ident, $k:ident, $i:expr) => {
        sha2_round!($a, $b, $c, $d, $e, $f, $g, $h, $w, $k, $i, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($h, $a, $b, $c, $d, $e, $f, $g, $w, $k, $i + 1, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($g, $h, $a, $b, $c, $d, $e, $f, $w, $k, $i + 2, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($f, $g, $h, $a, $b, $c, $d, $e, $w, $k, $i + 3, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($e, $f, $g, $h, $a, $b, $c, $d, $w, $k, $i + 4, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($d, $e, $f, $g, $h, $a, $b, $c, $w, $k, $i + 5, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($c, $d, $e, $f, $g, $h, $a, $b, $w, $k, $i + 6, $ss0, $ss1, $bs0, $bs1);
        sha2_round!($b, $c, $d, $e, $f, $g, $h, $a, $w, $k, $i + 7, $ss0, $ss1, $bs0, $bs1);
    };
}

#[inline(always)]
fn s256_0(x: u32) -> u32 {
    x.rotate_right(7) ^ x.rotate_right(18) ^ (x >> 3)
}
#[inline(always)]
fn s256_1(x: u32) -> u32 {
    x.rotate_right(17) ^ x.rotate_right(19) ^ (x >> 10)
}
#[inline(always)]
fn b256_0(x: u32) -> u32 {
    x.rotate_right(2) ^ x.rotate_right(13) ^ x.rotate_right(22)
}
#[inline(always)]
fn b256_1(x: u32) -> u32 {
    x.rotate_right(6) ^ x.rotate_right(11) ^ x.rotate_right(25)
}
#[inline(always)]
fn s512_0(x: u64) -> u64 {
    x.rotate_right(1) ^ x.rotate_right(8) ^ (x >> 7)
}
#[inline(always)]
fn s512_1(x: u64) -> u64 {
    x.rotate_right(19) ^ x.rotate_right(61) ^ (x >> 6)
}
#[inline(always)]
fn b512_0(x: u64) -> u64 {
    x.rotate_right(28) ^ x.rotate_right(34) ^ x.rotate_right(39)
}
#[inline(always)]
fn b512_1(x: u64) -> u64 {
    x.rotate_right(14) ^ x.rotate_right(18) ^ x.rotate_right(41)
}

/// SHA-256 compression of one block given as big-endian words.
#[inline(always)]
pub(crate) fn compress256(state: &mut [u32; 8], block: &[u32; 16]) {
    let mut w = *block;
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    macro_rules! r8 {
        ($i:expr) => {
            sha2_round8!(
                [a, b, c, d, e, f, g, h, s256_0, s256_1, b256_0, b256_1],
                w,
                K256,
                $i
            )
        };
    }
    r8!(0);
    r8!(8);
    r8!(16);
    r8!(24);
    r8!(32);
    r8!(40);
    r8!(48);
    r8!(56);
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

/// SHA-512 compression of one block given as big-endian words.
#[inline(always)]
pub(crate) fn compress512(state: &mut [u64; 8], block: &[u64; 16]) {
    let mut w = *block;
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    macro_rules! r8 {
        ($i:expr) => {
            sha2_round8!(
                [a, b, c, d, e, f, g, h, s512_0, s512_1, b512_0, b512_1],
                w,
                K512,
                $i
            )
        };
    }
    r8!(0);
    r8!(8);
    r8!(16);
    r8!(24);
    r8!(32);
    r8!(40);
    r8!(48);
    r8!(56);
    r8!(64);
    r8!(72);
    for (s, v) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.wrapping_add(v);
    }
}

/// One SHA-1 round; `$f` is the round function's expression over b, c, d.
macro_rules! sha1_round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $w:ident, $i:expr, $k:expr, $f:expr) => {
        if $i >= 16 {
            $w[$i & 15] =
                ($w[($i + 13) & 15] ^ $w[($i + 8) & 15] ^ $w[($i + 2) & 15] ^ $w[$i & 15])
                    .rotate_left(1);
        }
        $e = $e
            .wrapping_add($a.rotate_left(5))
            .wrapping_add($f($b, $c, $d))
            .wrapping_add($k)
            .wrapping_add($w[$i & 15]);
        $b = $b.rotate_left(30);
    };
}

/// Five SHA-1 rounds starting at `$i` (the names rotate back to where they began).
macro_rules! sha1_round5 {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $w:ident, $i:expr, $k:expr, $f:expr) => {
        sha1_round!($a, $b, $c, $d, $e, $w, $i, $k, $f);
        sha1_round!($e, $a, $b, $c, $d, $w, $i + 1, $k, $f);
        sha1_round!($d, $e, $a, $b, $c, $w, $i + 2, $k, $f);
        sha1_round!($c, $d, $e, $a, $b, $w, $i + 3, $k, $f);
        sha1_round!($b, $c, $d, $e, $a, $w, $i + 4, $k, $f);
    };
}

#[inline(always)]
fn f_ch(b: u32, c: u32, d: u32) -> u32 {
    d ^ (b & (c ^ d))
}
#[inline(always)]
fn f_parity(b: u32, c: u32, d: u32) -> u32 {
    b ^ c ^ d
}
#[inline(always)]
fn f_maj(b: u32, c: u32, d: u32) -> u32 {
    (b & c) | (d & (b | c))
}

/// SHA-1 compression of one block given as big-endian words.
#[inline(always)]
pub(crate) fn compress1(state: &mut [u32; 5], block: &[u32; 16]) {
    let mut w = *block;
    let [mut a, mut b, mut c, mut d, mut e] = *state;
    macro_rules! r20 {
        ($i:expr, $k:expr, $f:ident) => {
            sha1_round5!(a, b, c, d, e, w, $i, $k, $f);
            sha1_round5!(a, b, c, d, e, w, $i + 5, $k, $f);
            sha1_round5!(a, b, c, d, e, w, $i + 10, $k, $f);
            sha1_round5!(a, b, c, d, e, w, $i + 15, $k, $f);
        };
    }
    r20!(0, 0x5A827999, f_ch);
    r20!(20, 0x6ED9EBA1, f_parity);
    r20!(40, 0x8F1BBCDC, f_maj);
    r20!(60, 0xCA62C1D6, f_parity);
    for (s, v) in state.iter_mut().zip([a, b, c, d, e]) {
        *s = s.wrapping_add(v);
    }
}

/// The PBKDF2 loop for SHA-1: `acc` holds U_1 on entry and U_1 ^ ... ^ U_c on return.
///
/// The message block is the previous U (5 words) followed by fixed padding for a
/// 64 + 20 byte message; only its first words change between compressions.
#[inline(always)]
pub(crate) fn iterate1(istate: &[u32; 5], ostate: &[u32; 5], acc: &mut [u32; 5], iterations: u32) {
    let mut u = *acc;
    let mut x = *acc;
    for _ in 1..iterations {
        let mut m = [0u32; 16];
        m[..5].copy_from_slice(&u);
        m[5] = 0x8000_0000;
        m[15] = (64 + 20) * 8;
        let mut s = *istate;
        compress1(&mut s, &m);
        m[..5].copy_from_slice(&s);
        let mut o = *ostate;
        compress1(&mut o, &m);
        u = o;
        for (x, o) in x.iter_mut().zip(o) {
            *x ^= o;
        }
    }
    *acc = x;
}

/// The PBKDF2 loop for SHA-256 (see [`iterate1`]).
#[inline(always)]
pub(crate) fn iterate256(
    istate: &[u32; 8],
    ostate: &[u32; 8],
    acc: &mut [u32; 8],
    iterations: u32,
) {
    let mut u = *acc;
    let mut x = *acc;
    for _ in 1..iterations {
        let mut m = [0u32; 16];
        m[..8].copy_from_slice(&u);
        m[8] = 0x8000_0000;
        m[15] = (64 + 32) * 8;
        let mut s = *istate;
        compress256(&mut s, &m);
        m[..8].copy_from_slice(&s);
        let mut o = *ostate;
        compress256(&mut o, &m);
        u = o;
        for (x, o) in x.iter_mut().zip(o) {
            *x ^= o;
        }
    }
    *acc = x;
}

/// The PBKDF2 loop for SHA-512 (see [`iterate1`]).
#[inline(always)]
pub(crate) fn iterate512(
    istate: &[u64; 8],
    ostate: &[u64; 8],
    acc: &mut [u64; 8],
    iterations: u32,
) {
    let mut u = *acc;
    let mut x = *acc;
    for _ in 1..iterations {
        let mut m = [0u64; 16];
        m[..8].copy_from_slice(&u);
        m[8] = 0x8000_0000_0000_0000;
        m[15] = (128 + 64) * 8;
        let mut s = *istate;
        compress512(&mut s, &m);
        m[..8].copy_from_slice(&s);
        let mut o = *ostate;
        compress512(&mut o, &m);
        u = o;
        for (x, o) in x.iter_mut().zip(o) {
            *x ^= o;
        }
    }
    *acc = x;
}

/// SHA-1 compression of every whole 64-byte block of `data`.
#[inline(always)]
pub(crate) fn blocks1(state: &mut [u32; 5], data: &[u8]) {
    for block in data.chunks_exact(64) {
        compress1(state, &words32(block));
    }
}

/// SHA-256 compression of every whole 64-byte block of `data`.
#[inline(always)]
pub(crate) fn blocks256(state: &mut [u32; 8], data: &[u8]) {
    for block in data.chunks_exact(64) {
        compress256(state, &words32(block));
    }
}

/// SHA-512 compression of every whole 128-byte block of `data`.
#[inline(always)]
pub(crate) fn blocks512(state: &mut [u64; 8], data: &[u8]) {
    for block in data.chunks_exact(128) {
        let mut w = [0u64; 16];
        for (w, b) in w.iter_mut().zip(block.chunks_exact(8)) {
            let mut x = [0u8; 8];
            x.copy_from_slice(b);
            *w = u64::from_be_bytes(x);
        }
        compress512(state, &w);
    }
}

#[inline(always)]
fn words32(block: &[u8]) -> [u32; 16] {
    let mut w = [0u32; 16];
    for (w, b) in w.iter_mut().zip(block.chunks_exact(4)) {
        let mut x = [0u8; 4];
        x.copy_from_slice(b);
        *w = u32::from_be_bytes(x);
    }
    w
}
