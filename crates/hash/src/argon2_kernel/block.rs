//! The Argon2 block: the unit every part of the kernel (the walk, the compressions, the
//! per-thread arena in `arch::mem`) works on, in a leaf so they all import it one way.

/// Bytes in a block.
pub const BLOCK_BYTES: usize = 1024;
/// 64-bit words in a block.
pub const BLOCK_WORDS: usize = 128;
/// One 1 KiB Argon2 block, cache-line aligned (the vector kernels load it whole).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Block(pub [u64; BLOCK_WORDS]);

impl Block {
    /// The all-zero block.
    pub const ZERO: Block = Block([0; BLOCK_WORDS]);

    pub(crate) fn from_bytes(bytes: &[u8; BLOCK_BYTES]) -> Block {
        let mut b = Block::ZERO;
        for (w, c) in b.0.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(c);
            *w = u64::from_le_bytes(le);
        }
        b
    }

    pub(crate) fn xor_assign(&mut self, other: &Block) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a ^= b;
        }
    }
}
