//! Drives the memory walk of RFC 9106 section 3.4 slice by slice with the chosen
//! compression kernel (`soft`, `arch/x86_64/argon2_avx2.rs` or `argon2_avx512.rs`); the walk itself is
//! generic and lives in `walk`. Lanes of one slice go to the caller's [`LaneExecutor`].

use super::block::Block;
use super::walk::fill_segment;
pub(crate) use super::walk::{Geometry, Segment};
use super::{Backend, LaneExecutor};

/// Whether the AVX2 kernel can run here.
pub(crate) fn avx2_available() -> bool {
    segment_kernel(Backend::Avx2).is_some()
}

/// Whether the AVX-512 kernel can run here.
pub(crate) fn avx512_available() -> bool {
    segment_kernel(Backend::Avx512).is_some()
}

/// The segment filler of a concrete backend (`None`: the CPU lacks it).
fn segment_kernel(backend: Backend) -> Option<fn(Segment<'_>)> {
    match backend {
        Backend::Portable => Some(fill_portable),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 => crate::arch::x86_64::argon2_avx2::detect(),
        #[cfg(target_arch = "x86_64")]
        Backend::Avx512 => crate::arch::x86_64::argon2_avx512::detect(),
        _ => None,
    }
}

fn fill_portable(s: Segment<'_>) {
    fill_segment(super::soft::Portable, s);
}

/// Fill every block after the first two of each lane.
pub(crate) fn fill_memory(
    geo: &Geometry,
    memory: &mut [Block],
    backend: Backend,
    lanes: &dyn LaneExecutor,
) {
    let kernel = segment_kernel(backend).unwrap_or(fill_portable);
    let seg_len = geo.segment_len() as usize;
    let p = geo.lanes as usize;
    for pass in 0..geo.passes {
        for slice in 0..4u32 {
            let mut own: Vec<&mut [Block]> = Vec::with_capacity(p);
            let mut others: Vec<&[Block]> = Vec::with_capacity(4 * p);
            for (i, seg) in memory.chunks_exact_mut(seg_len).enumerate() {
                if i % 4 == slice as usize {
                    own.push(seg);
                    others.push(&[]);
                } else {
                    others.push(seg);
                }
            }
            let others = &others[..];
            if p == 1 {
                // No boxing for the common single-lane case.
                if let Some(seg) = own.pop() {
                    kernel(Segment {
                        geo,
                        pass,
                        slice,
                        lane: 0,
                        own: seg,
                        others,
                    });
                }
                continue;
            }
            let jobs: Vec<Box<dyn FnOnce() + Send + '_>> = own
                .into_iter()
                .enumerate()
                .map(|(lane, seg)| {
                    Box::new(move || {
                        kernel(Segment {
                            geo,
                            pass,
                            slice,
                            lane: lane as u32,
                            own: seg,
                            others,
                        })
                    }) as Box<dyn FnOnce() + Send + '_>
                })
                .collect();
            lanes.run_all(jobs);
        }
    }
}
