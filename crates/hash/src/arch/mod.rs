//! Every `unsafe` block of the hash crate lives under this module: CPU intrinsics behind
//! runtime feature detection, the memory mappings of the memory-hard KDFs, and the
//! lifetime erasure that lets pool threads run the lanes of an argon2 slice (`lanes`).
//!
//! Pattern: each backend module keeps its `#[target_feature]` functions private and hands
//! out safe function pointers only from a `detect()`-style constructor that has checked the
//! CPU first, so no safe code can reach an instruction the CPU lacks. Callers pick a
//! backend once per derivation and call through the pointer.
//!
//! Single-stream kernels: `x86_64::{sha1_ni, sha256_ni, sha512_vl, sha512_bmi2}`. Multi-buffer
//! (batch) kernels are added as further modules next to them. Argon2: `x86_64::argon2_avx2`
//! (block compression) and `mem` (per-thread arenas: aligned, huge-page advised mappings).

pub(crate) mod clock;
pub(crate) mod lanes;
pub(crate) mod mem;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86_64;
