//! SHA-512 PBKDF2 loop compiled for BMI2 (`rorx`, `andn`: rotates and the choice function
//! without flag dependencies or extra moves). It is the portable scalar loop, state and
//! message in locals, fully unrolled; only the instruction selection differs.
//!
//! The fallback for x86-64 CPUs with BMI2 but without AVX-512VL; where AVX-512VL exists,
//! `sha512_vl` (same rounds, message schedule in vectors) is faster.

use crate::pbkdf2::soft;

/// Signature of the PBKDF2 loop: (inner state, outer state, U_1 in / XOR out, iterations).
pub(crate) type LoopFn = fn(&[u64; 8], &[u64; 8], &mut [u64; 8], u32);
/// Signature of the multi-block compression (whole 128-byte blocks only).
pub(crate) type BlocksFn = fn(&mut [u64; 8], &[u8]);

/// The BMI2 kernels, if this CPU has BMI2.
pub(crate) fn detect() -> Option<(LoopFn, BlocksFn)> {
    if std::arch::is_x86_feature_detected!("bmi2") && std::arch::is_x86_feature_detected!("bmi1") {
        Some((pbkdf2_loop, compress_blocks))
    } else {
        None
    }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn pbkdf2_loop(istate: &[u64; 8], ostate: &[u64; 8], acc: &mut [u64; 8], iterations: u32) {
    // SAFETY: private; its address escapes only from `detect`, after bmi1 and bmi2 were
    // detected, the features `loop_bmi2` enables.
    unsafe { loop_bmi2(istate, ostate, acc, iterations) }
}

/// Only reachable through [`detect`], which checked the CPU features.
fn compress_blocks(state: &mut [u64; 8], data: &[u8]) {
    // SAFETY: as for `pbkdf2_loop`: only reachable after `detect` checked the features.
    unsafe { blocks_bmi2(state, data) }
}

#[target_feature(enable = "bmi1,bmi2")]
fn loop_bmi2(istate: &[u64; 8], ostate: &[u64; 8], acc: &mut [u64; 8], iterations: u32) {
    soft::iterate512(istate, ostate, acc, iterations);
}

#[target_feature(enable = "bmi1,bmi2")]
fn blocks_bmi2(state: &mut [u64; 8], data: &[u8]) {
    soft::blocks512(state, data);
}
