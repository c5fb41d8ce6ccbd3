//! The three SHA functions as the batch set-up sees them: a state of words, a 16-word block,
//! the compression function, and the single-stream PBKDF2 loops of [`crate::pbkdf2`].
//!
//! The batch kernel needs the HMAC states in the open (they are computed once per job and
//! then fed to the lanes), so the set-up here works on words with the portable compression
//! functions of `pbkdf2::soft`. It only runs a handful of compressions per job (key states
//! and the first PBKDF2 block over the salt); the iterations run in the lane kernels.

use core::ops::BitXorAssign;

use zeroize::{Zeroize, Zeroizing};

use crate::pbkdf2::kernel::{self, Sha as _};
use crate::pbkdf2::{Backend, soft};

/// The single-stream PBKDF2 loop signature: (inner state, outer state, U_1 in / XOR out,
/// iterations), doing iterations 2..=c.
pub(crate) type LoopFn<S> = fn(&S, &S, &mut S, u32);

/// One SHA variant as the PBKDF2 chain sees it. The digest is the whole state (no truncated
/// variants here).
pub(crate) trait Hash: Sized + 'static {
    /// A message/state word (`u32` or `u64`).
    type Word: Copy + Default + BitXorAssign + Zeroize;
    /// The chaining state, which is also the digest.
    type State: Copy + Default + AsRef<[Self::Word]> + AsMut<[Self::Word]> + Zeroize;
    /// Bytes per message block (64 or 128).
    const BLOCK_BYTES: usize;
    /// Bytes of the big-endian bit-length field that ends the padding (8 or 16).
    const LENGTH_BYTES: usize;
    /// Bytes per word.
    const WORD_BYTES: usize = core::mem::size_of::<Self::Word>();
    /// Initial hash value.
    const IV: Self::State;

    /// Compress one block given as 16 big-endian-decoded words.
    fn compress(state: &mut Self::State, block: &[Self::Word; 16]);
    /// Decode a big-endian word from exactly [`Hash::WORD_BYTES`] bytes.
    fn word_from_be(bytes: &[u8]) -> Self::Word;
    /// Encode `word` big-endian into `out`; a shorter `out` takes the leading bytes, which
    /// is how a truncated last PBKDF2 block is written.
    fn word_to_be(word: Self::Word, out: &mut [u8]);
    /// The single-stream PBKDF2 loop: the fastest this CPU has, or the portable one.
    fn single(portable: bool) -> LoopFn<Self::State>;

    /// Digest length in bytes.
    fn out_bytes() -> usize {
        Self::IV.as_ref().len() * Self::WORD_BYTES
    }
}

/// SHA-1 (FIPS 180-4, 6.1).
#[derive(Debug)]
pub(crate) struct Sha1;
/// SHA-256 (FIPS 180-4, 6.2).
#[derive(Debug)]
pub(crate) struct Sha256;
/// SHA-512 (FIPS 180-4, 6.4).
#[derive(Debug)]
pub(crate) struct Sha512;

fn backend(portable: bool) -> Backend {
    if portable {
        Backend::Portable
    } else {
        Backend::Auto
    }
}

fn u32_from_be(bytes: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(bytes);
    u32::from_be_bytes(b)
}

fn u32_to_be(word: u32, out: &mut [u8]) {
    let n = out.len().min(4);
    out[..n].copy_from_slice(&word.to_be_bytes()[..n]);
}

impl Hash for Sha1 {
    type Word = u32;
    type State = [u32; 5];
    const BLOCK_BYTES: usize = 64;
    const LENGTH_BYTES: usize = 8;
    const IV: [u32; 5] = soft::IV1;

    fn compress(state: &mut [u32; 5], block: &[u32; 16]) {
        soft::compress1(state, block);
    }
    fn word_from_be(bytes: &[u8]) -> u32 {
        u32_from_be(bytes)
    }
    fn word_to_be(word: u32, out: &mut [u8]) {
        u32_to_be(word, out);
    }
    fn single(portable: bool) -> LoopFn<[u32; 5]> {
        kernel::Sha1::kernel(backend(portable)).iterate
    }
}

impl Hash for Sha256 {
    type Word = u32;
    type State = [u32; 8];
    const BLOCK_BYTES: usize = 64;
    const LENGTH_BYTES: usize = 8;
    const IV: [u32; 8] = soft::IV256;

    fn compress(state: &mut [u32; 8], block: &[u32; 16]) {
        soft::compress256(state, block);
    }
    fn word_from_be(bytes: &[u8]) -> u32 {
        u32_from_be(bytes)
    }
    fn word_to_be(word: u32, out: &mut [u8]) {
        u32_to_be(word, out);
    }
    fn single(portable: bool) -> LoopFn<[u32; 8]> {
        kernel::Sha256::kernel(backend(portable)).iterate
    }
}

impl Hash for Sha512 {
    type Word = u64;
    type State = [u64; 8];
    const BLOCK_BYTES: usize = 128;
    const LENGTH_BYTES: usize = 16;
    const IV: [u64; 8] = soft::IV512;

    fn compress(state: &mut [u64; 8], block: &[u64; 16]) {
        soft::compress512(state, block);
    }
    fn word_from_be(bytes: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        u64::from_be_bytes(b)
    }
    fn word_to_be(word: u64, out: &mut [u8]) {
        let n = out.len().min(8);
        out[..n].copy_from_slice(&word.to_be_bytes()[..n]);
    }
    fn single(portable: bool) -> LoopFn<[u64; 8]> {
        kernel::Sha512::kernel(backend(portable)).iterate
    }
}

/// Compress one block given as bytes.
fn absorb<H: Hash>(state: &mut H::State, block: &[u8], words: &mut [H::Word; 16]) {
    for (w, chunk) in words.iter_mut().zip(block.chunks_exact(H::WORD_BYTES)) {
        *w = H::word_from_be(chunk);
    }
    H::compress(state, words);
}

/// Hash `parts` (concatenated) starting from `state`, which has already absorbed
/// `prefix_bytes` bytes (a whole number of blocks), and return the final state.
pub(crate) fn finish<H: Hash>(
    mut state: H::State,
    prefix_bytes: usize,
    parts: &[&[u8]],
) -> H::State {
    let bb = H::BLOCK_BYTES;
    let mut buf = Zeroizing::new([0u8; 128]);
    let mut words = Zeroizing::new([H::Word::default(); 16]);
    let mut fill = 0usize;
    let mut total = prefix_bytes as u128;
    for part in parts {
        total += part.len() as u128;
        let mut rest: &[u8] = part;
        while !rest.is_empty() {
            let take = (bb - fill).min(rest.len());
            buf[fill..fill + take].copy_from_slice(&rest[..take]);
            fill += take;
            rest = &rest[take..];
            if fill == bb {
                absorb::<H>(&mut state, &buf[..bb], &mut words);
                fill = 0;
            }
        }
    }
    buf[fill] = 0x80;
    fill += 1;
    if fill > bb - H::LENGTH_BYTES {
        buf[fill..bb].fill(0);
        absorb::<H>(&mut state, &buf[..bb], &mut words);
        fill = 0;
    }
    buf[fill..bb].fill(0);
    let bits = (total * 8).to_be_bytes();
    buf[bb - H::LENGTH_BYTES..bb].copy_from_slice(&bits[16 - H::LENGTH_BYTES..]);
    absorb::<H>(&mut state, &buf[..bb], &mut words);
    state
}

/// Write `state` big-endian into `out`, truncated to `out.len()` bytes.
pub(crate) fn write_be<H: Hash>(state: &H::State, out: &mut [u8]) {
    for (w, chunk) in state.as_ref().iter().zip(out.chunks_mut(H::WORD_BYTES)) {
        H::word_to_be(*w, chunk);
    }
}
