//! Portable BlaMka compression G (RFC 9106 section 3.5-3.6): any CPU, and the reference
//! the vector kernels are tested against.

use super::block::{BLOCK_WORDS, Block};
use super::walk::Compress;

/// The portable kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

/// `x + y + 2 * lo32(x) * lo32(y)`, the multiplication-hardened addition of BlaMka.
#[inline(always)]
fn fblamka(x: u64, y: u64) -> u64 {
    let m = (x & 0xffff_ffff) * (y & 0xffff_ffff);
    x.wrapping_add(y).wrapping_add(m.wrapping_mul(2))
}

#[inline(always)]
fn gb(v: &mut [u64; BLOCK_WORDS], a: usize, b: usize, c: usize, d: usize) {
    v[a] = fblamka(v[a], v[b]);
    v[d] = (v[d] ^ v[a]).rotate_right(32);
    v[c] = fblamka(v[c], v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(24);
    v[a] = fblamka(v[a], v[b]);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = fblamka(v[c], v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(63);
}

/// The permutation P on the sixteen words at positions `w`.
#[inline(always)]
fn p(v: &mut [u64; BLOCK_WORDS], w: [usize; 16]) {
    gb(v, w[0], w[4], w[8], w[12]);
    gb(v, w[1], w[5], w[9], w[13]);
    gb(v, w[2], w[6], w[10], w[14]);
    gb(v, w[3], w[7], w[11], w[15]);
    gb(v, w[0], w[5], w[10], w[15]);
    gb(v, w[1], w[6], w[11], w[12]);
    gb(v, w[2], w[7], w[8], w[13]);
    gb(v, w[3], w[4], w[9], w[14]);
}

/// P on the eight rows (16 consecutive words each), then on the eight columns (word
/// pairs `2j, 2j+1` of every row).
#[inline(always)]
pub(crate) fn permute(q: &mut [u64; BLOCK_WORDS]) {
    for row in 0..8 {
        let base = 16 * row;
        p(q, std::array::from_fn(|k| base + k));
    }
    for col in 0..8 {
        p(q, std::array::from_fn(|k| 16 * (k / 2) + 2 * col + (k % 2)));
    }
}

impl Compress for Portable {
    #[inline(always)]
    fn compress(
        self,
        prev: &Block,
        refb: &Block,
        out: &mut Block,
        xor: bool,
        hint: impl FnOnce(u64),
    ) {
        // R = X ^ Y is recomputed at the end rather than kept: one block of state, not
        // three, and no block copies.
        let mut q = Block::ZERO;
        for ((q, x), y) in q.0.iter_mut().zip(&prev.0).zip(&refb.0) {
            *q = x ^ y;
        }
        permute(&mut q.0);
        let words = q.0.iter().zip(&prev.0).zip(&refb.0).zip(out.0.iter_mut());
        if xor {
            for (((q, x), y), o) in words {
                *o ^= q ^ x ^ y;
            }
        } else {
            for (((q, x), y), o) in words {
                *o = q ^ x ^ y;
            }
        }
        hint(out.0[0]);
    }

    #[inline(always)]
    fn prefetch(self, _block: &Block) {}
}
