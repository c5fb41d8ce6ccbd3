//! Multi-buffer PBKDF2-HMAC-SHA1 and -SHA256 on 32-bit vector lanes: one chain per lane,
//! as in Intel's multi-buffer hashing (isa-l_crypto) and John the Ripper's SIMD formats.
//!
//! SHA-NI runs one chain per instruction stream, and its latency caps how many chains one
//! core can interleave (about 1.33x one chain on recent Intel cores, 2x on Zen 5). Wide
//! integer vectors have no such cap: register j holds word j of every chain, and each SHA
//! operation (add, rotate, the three-input boolean functions) is one instruction for all
//! lanes. On a core with two 512-bit integer ports that is 16 compressions for roughly six
//! times the time of one SHA-NI compression.
//!
//! The kernel body is written once, as [`lane_kernels!`], over a small set of vector
//! operations (`splat`, `add`, `xor`, `xor3`, `ch`, `maj`, the SHA-256 sigma functions and
//! the SHA-1 rotations) that each instruction-set module defines for its own register type
//! `V` and lane count `LANES`, then expands the macro: one copy of the code per
//! instruction set, each compiled with its own target features.
//!
//! PBKDF2 shape: every compression after the first block hashes a 20- or 32-byte digest
//! plus constant padding, so half of the first sixteen message words are constants. They
//! are written as constants, and the compiler folds them (and the first schedule words
//! that depend only on them) out of the loop.

/// SHA-1 round constants, one per twenty rounds (FIPS 180-4, 4.2.1).
pub(crate) const K1: [u32; 4] = [0x5A82_7999, 0x6ED9_EBA1, 0x8F1B_BCDC, 0xCA62_C1D6];

/// Bit length of the message of every PBKDF2 compression after the key blocks: one
/// 64-byte key block plus the 20-byte SHA-1 digest.
pub(crate) const BITS1: u32 = (64 + 20) * 8;

/// The same for SHA-256 (32-byte digest).
pub(crate) const BITS256: u32 = (64 + 32) * 8;

/// The padding word that follows the digest (a single 1 bit).
pub(crate) const PAD: u32 = 0x8000_0000;

/// The kernels of one instruction set, as function pointers (handed out only by that
/// module's `detect`, after checking the CPU).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernels {
    /// Chains per group (vector lanes).
    pub(crate) lanes: usize,
    /// PBKDF2-HMAC-SHA1 iterations 2..=c on every chain, in groups of `lanes`.
    pub(crate) sha1: fn(&mut [crate::batch::chain::Chain<crate::batch::sha::Sha1>], u32),
    /// PBKDF2-HMAC-SHA256 iterations 2..=c on every chain, in groups of `lanes`.
    pub(crate) sha256: fn(&mut [crate::batch::chain::Chain<crate::batch::sha::Sha256>], u32),
}

/// Expands, inside an instruction-set module that defines `V`, `LANES` and the vector
/// operations named in the module doc, to private `run_sha1` and `run_sha256` functions
/// (the [`Kernels`] entries) built with the target features `$feat`.
macro_rules! lane_kernels {
    ($feat:literal) => {
        use $crate::arch::x86_64::lanes32::{BITS1, BITS256, K1, PAD};
        use $crate::batch::chain::Chain;
        use $crate::batch::sha::{Sha1, Sha256};
        use $crate::pbkdf2::soft::K256;

        /// `LANES` u32 (lane 0 first) to a register.
        fn from_lanes(v: [u32; LANES]) -> V {
            // SAFETY: `[u32; LANES]` and `V` have the same size (checked at compile time by
            // `transmute`) and are both plain integer data; every bit pattern is valid.
            unsafe { core::mem::transmute::<[u32; LANES], V>(v) }
        }

        /// A register to its `LANES` u32 (lane 0 first).
        fn to_lanes(v: V) -> [u32; LANES] {
            // SAFETY: as for `from_lanes`.
            unsafe { core::mem::transmute::<V, [u32; LANES]>(v) }
        }

        /// Transpose: register j holds word j of lanes 0..n (`word(lane, j)`); lanes past
        /// `n` are zero (idle).
        fn gather<const N: usize>(n: usize, word: impl Fn(usize, usize) -> u32) -> [V; N] {
            core::array::from_fn(|j| {
                let mut l = [0u32; LANES];
                for (i, x) in l.iter_mut().enumerate().take(n) {
                    *x = word(i, j);
                }
                from_lanes(l)
            })
        }

        /// One SHA-256 round with the state registers named in rotated order.
        macro_rules! round256 {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $kw:expr) => {{
                let t1 = add(add($h, $kw), add(bsig1($e), ch($e, $f, $g)));
                let t2 = add(bsig0($a), maj($a, $b, $c));
                $d = add($d, t1);
                $h = add(t1, t2);
            }};
        }

        /// Sixteen SHA-256 rounds; `$kw(i)` gives K + W for round i of the sixteen.
        macro_rules! rounds16_256 {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $kw:ident) => {{
                round256!($a, $b, $c, $d, $e, $f, $g, $h, $kw(0));
                round256!($h, $a, $b, $c, $d, $e, $f, $g, $kw(1));
                round256!($g, $h, $a, $b, $c, $d, $e, $f, $kw(2));
                round256!($f, $g, $h, $a, $b, $c, $d, $e, $kw(3));
                round256!($e, $f, $g, $h, $a, $b, $c, $d, $kw(4));
                round256!($d, $e, $f, $g, $h, $a, $b, $c, $kw(5));
                round256!($c, $d, $e, $f, $g, $h, $a, $b, $kw(6));
                round256!($b, $c, $d, $e, $f, $g, $h, $a, $kw(7));
                round256!($a, $b, $c, $d, $e, $f, $g, $h, $kw(8));
                round256!($h, $a, $b, $c, $d, $e, $f, $g, $kw(9));
                round256!($g, $h, $a, $b, $c, $d, $e, $f, $kw(10));
                round256!($f, $g, $h, $a, $b, $c, $d, $e, $kw(11));
                round256!($e, $f, $g, $h, $a, $b, $c, $d, $kw(12));
                round256!($d, $e, $f, $g, $h, $a, $b, $c, $kw(13));
                round256!($c, $d, $e, $f, $g, $h, $a, $b, $kw(14));
                round256!($b, $c, $d, $e, $f, $g, $h, $a, $kw(15));
            }};
        }

        /// One SHA-256 compression of `msg || padding` (a 32-byte message after one key
        /// block) into `s`, every lane at once.
        #[target_feature(enable = $feat)]
        fn compress256(s: &mut [V; 8], msg: &[V; 8]) {
            let z = splat(0);
            let mut w = [
                msg[0], msg[1], msg[2], msg[3], msg[4], msg[5], msg[6], msg[7],
                splat(PAD), z, z, z, z, z, z, splat(BITS256),
            ];
            let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *s;
            let kw = |i: usize| add(w[i], splat(K256[i]));
            rounds16_256!(a, b, c, d, e, f, g, h, kw);
            // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], in a ring of sixteen.
            // The first sixteen scheduled words are written out on their own so that the
            // constant padding words fold; the last 32 rounds share one loop body.
            macro_rules! scheduled {
                ($blk:expr) => {
                    |i: usize| {
                        w[i] = add(
                            add(w[i], ssig0(w[(i + 1) % 16])),
                            add(w[(i + 9) % 16], ssig1(w[(i + 14) % 16])),
                        );
                        add(w[i], splat(K256[16 * $blk + i]))
                    }
                };
            }
            let mut kw = scheduled!(1);
            rounds16_256!(a, b, c, d, e, f, g, h, kw);
            for blk in 2..4 {
                let mut kw = scheduled!(blk);
                rounds16_256!(a, b, c, d, e, f, g, h, kw);
            }
            for (s, x) in s.iter_mut().zip([a, b, c, d, e, f, g, h]) {
                *s = add(*s, x);
            }
        }

        /// One SHA-1 round: `$e` becomes the new `a`, `$b` the new `c`; the caller
        /// renames the rest.
        macro_rules! round1 {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $kw:expr) => {{
                $e = add(add($e, $kw), add(rotl5($a), $f($b, $c, $d)));
                $b = rotl30($b);
            }};
        }

        /// Five SHA-1 rounds (after five the names are back in place) from round `$t`.
        macro_rules! rounds5_1 {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $kw:ident, $t:expr) => {{
                round1!($a, $b, $c, $d, $e, $f, $kw($t));
                round1!($e, $a, $b, $c, $d, $f, $kw($t + 1));
                round1!($d, $e, $a, $b, $c, $f, $kw($t + 2));
                round1!($c, $d, $e, $a, $b, $f, $kw($t + 3));
                round1!($b, $c, $d, $e, $a, $f, $kw($t + 4));
            }};
        }

        /// Twenty SHA-1 rounds with boolean function `$f` from round `$t`.
        macro_rules! rounds20_1 {
            ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $kw:ident, $t:expr) => {{
                rounds5_1!($a, $b, $c, $d, $e, $f, $kw, $t);
                rounds5_1!($a, $b, $c, $d, $e, $f, $kw, $t + 5);
                rounds5_1!($a, $b, $c, $d, $e, $f, $kw, $t + 10);
                rounds5_1!($a, $b, $c, $d, $e, $f, $kw, $t + 15);
            }};
        }

        /// One SHA-1 compression of `msg || padding` (a 20-byte message after one key
        /// block) into `s`, every lane at once.
        #[target_feature(enable = $feat)]
        fn compress1(s: &mut [V; 5], msg: &[V; 5]) {
            let z = splat(0);
            let mut w = [
                msg[0], msg[1], msg[2], msg[3], msg[4], splat(PAD), z, z,
                z, z, z, z, z, z, z, splat(BITS1),
            ];
            let [mut a, mut b, mut c, mut d, mut e] = *s;
            // All 80 rounds unrolled: `t` is a constant in every call, so the ring indices
            // are too and the padding words fold into the first schedule words.
            let mut kw = |t: usize| {
                if t >= 16 {
                    let i = t % 16;
                    w[i] = rotl1(xor(xor3(w[(i + 13) % 16], w[(i + 8) % 16], w[(i + 2) % 16]), w[i]));
                }
                add(w[t % 16], splat(K1[t / 20]))
            };
            rounds20_1!(a, b, c, d, e, ch, kw, 0);
            rounds20_1!(a, b, c, d, e, xor3, kw, 20);
            rounds20_1!(a, b, c, d, e, maj, kw, 40);
            rounds20_1!(a, b, c, d, e, xor3, kw, 60);
            for (s, x) in s.iter_mut().zip([a, b, c, d, e]) {
                *s = add(*s, x);
            }
        }

        /// `$name`: PBKDF2 iterations 2..=c for up to `LANES` chains of `$hash` (state of
        /// `$words` words) with compression `$compress`.
        macro_rules! lanes_fn {
            ($name:ident, $hash:ty, $words:literal, $compress:ident) => {
                #[target_feature(enable = $feat)]
                fn $name(chains: &mut [Chain<$hash>], iterations: u32) {
                    let n = chains.len().min(LANES);
                    let ist: [V; $words] = gather(n, |i, j| chains[i].inner[j]);
                    let ost: [V; $words] = gather(n, |i, j| chains[i].outer[j]);
                    let mut u: [V; $words] = gather(n, |i, j| chains[i].acc[j]);
                    let mut acc = u;
                    for _ in 1..iterations {
                        // One compression function for the inner and the outer hash (one
                        // copy in the instruction cache): the digest of one is the
                        // message of the next.
                        for base in [&ist, &ost] {
                            let mut s = *base;
                            $compress(&mut s, &u);
                            u = s;
                        }
                        for (x, u) in acc.iter_mut().zip(u) {
                            *x = xor(*x, u);
                        }
                    }
                    for (j, x) in acc.into_iter().enumerate() {
                        for (chain, word) in chains.iter_mut().zip(to_lanes(x)) {
                            chain.acc[j] = word;
                        }
                    }
                }
            };
        }
        lanes_fn!(lanes1, Sha1, 5, compress1);
        lanes_fn!(lanes256, Sha256, 8, compress256);

        /// Only reachable through the module's `detect`, which checked the CPU.
        fn run_sha1(chains: &mut [Chain<Sha1>], iterations: u32) {
            for group in chains.chunks_mut(LANES) {
                // SAFETY: `run_sha1` is private and its address escapes only from
                // `detect`, after every feature in `$feat` was detected.
                unsafe { lanes1(group, iterations) }
            }
        }

        /// Only reachable through the module's `detect`, which checked the CPU.
        fn run_sha256(chains: &mut [Chain<Sha256>], iterations: u32) {
            for group in chains.chunks_mut(LANES) {
                // SAFETY: as for `run_sha1`.
                unsafe { lanes256(group, iterations) }
            }
        }

        /// This module's kernels (for `detect`, after the feature check).
        fn kernels() -> $crate::arch::x86_64::lanes32::Kernels {
            $crate::arch::x86_64::lanes32::Kernels {
                lanes: LANES,
                sha1: run_sha1,
                sha256: run_sha256,
            }
        }
    };
}
pub(crate) use lane_kernels;

/// Expands, inside an instruction-set module that defines `V` and imports the named
/// intrinsics, to the vector operations `lane_kernels!` needs, written with AVX-512's
/// one-instruction rotates (`vprord`/`vprold`) and three-input logic (`vpternlogd`): the
/// same code for zmm (sixteen lanes) and, with AVX-512VL, ymm (eight lanes).
macro_rules! avx512_ops {
    (
        $feat:literal,
        set1: $set1:ident,
        add: $add:ident,
        xor: $xor:ident,
        ternlog: $tern:ident,
        ror: $ror:ident,
        rol: $rol:ident,
        srli: $srli:ident $(,)?
    ) => {
        #[target_feature(enable = $feat)]
        #[inline]
        fn splat(x: u32) -> V {
            $set1(x as i32)
        }

        #[target_feature(enable = $feat)]
        #[inline]
        fn add(a: V, b: V) -> V {
            $add(a, b)
        }

        #[target_feature(enable = $feat)]
        #[inline]
        fn xor(a: V, b: V) -> V {
            $xor(a, b)
        }

        /// `a ^ b ^ c` (also SHA-1's Parity).
        #[target_feature(enable = $feat)]
        #[inline]
        fn xor3(a: V, b: V, c: V) -> V {
            $tern(a, b, c, 0x96)
        }

        /// `(e & f) ^ (!e & g)`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn ch(e: V, f: V, g: V) -> V {
            $tern(e, f, g, 0xCA)
        }

        /// `(a & b) ^ (a & c) ^ (b & c)`.
        #[target_feature(enable = $feat)]
        #[inline]
        fn maj(a: V, b: V, c: V) -> V {
            $tern(a, b, c, 0xE8)
        }

        /// SHA-256 Σ0.
        #[target_feature(enable = $feat)]
        #[inline]
        fn bsig0(x: V) -> V {
            xor3($ror(x, 2), $ror(x, 13), $ror(x, 22))
        }

        /// SHA-256 Σ1.
        #[target_feature(enable = $feat)]
        #[inline]
        fn bsig1(x: V) -> V {
            xor3($ror(x, 6), $ror(x, 11), $ror(x, 25))
        }

        /// SHA-256 σ0.
        #[target_feature(enable = $feat)]
        #[inline]
        fn ssig0(x: V) -> V {
            xor3($ror(x, 7), $ror(x, 18), $srli(x, 3))
        }

        /// SHA-256 σ1.
        #[target_feature(enable = $feat)]
        #[inline]
        fn ssig1(x: V) -> V {
            xor3($ror(x, 17), $ror(x, 19), $srli(x, 10))
        }

        #[target_feature(enable = $feat)]
        #[inline]
        fn rotl1(x: V) -> V {
            $rol(x, 1)
        }

        #[target_feature(enable = $feat)]
        #[inline]
        fn rotl5(x: V) -> V {
            $rol(x, 5)
        }

        #[target_feature(enable = $feat)]
        #[inline]
        fn rotl30(x: V) -> V {
            $rol(x, 30)
        }

        lane_kernels!($feat);
    };
}
pub(crate) use avx512_ops;
