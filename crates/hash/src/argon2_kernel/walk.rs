//! The memory walk of RFC 9106 section 3.4, generic over the block compression:
//! passes, slices, segments, reference indexing and the data-independent address blocks.
//! A leaf below `fill` (which picks a kernel and drives the slices) and below the
//! kernels themselves (`soft`, `arch/x86_64/argon2_avx2.rs`), which instantiate the walk
//! inside their own `#[target_feature]` functions: the kernels import the walk, the
//! walk imports no kernel.
//!
//! Memory is lane-major (lane `l` owns blocks `l * lane_len ..`), cut into segments of
//! `lane_len / 4` blocks. During slice `s`, lane `l` writes only its segment `(l, s)` and
//! reads only its own lane there; every other segment is read-only (the reference area of
//! other lanes never includes the current slice). So each slice hands every lane a `&mut`
//! to its segment and a shared view of all others: the lanes run in parallel without a
//! line of `unsafe`.
//!
//! The walk is `#[inline(always)]` and generic so each kernel instantiates it inside its
//! own `#[target_feature]` function (`arch/x86_64/argon2_avx2.rs`), where the compression
//! inlines into the loop. The kernel is told the first output word of each block as soon
//! as it has it (`hint`): for data-dependent addressing that word is the next block's
//! reference index, and prefetching the reference block then overlaps the miss with the
//! rest of the output stores (a kernel may finish word 0 early for this:
//! [`Compress::compress_dependent`]). For data-independent addressing every reference of
//! the current address block is known in advance, so the hint prefetches [`AHEAD`] blocks
//! ahead instead: one block's compression (~100 ns on Zen 4) does not cover a miss to
//! DRAM on a host whose shared L3 other tenants keep full.
//! The block being written is not prefetched: the walk writes a lane in order, which the
//! hardware's stream prefetchers follow (a software prefetch 2 blocks ahead measured 1-2%
//! faster on Zen 3 while the wipe sent the arena to DRAM after every hash, and 3-4% slower
//! on an Intel Xeon with the wipe that leaves it in the cache, `arch::mem`).

use super::Variant;
use super::block::{BLOCK_WORDS, Block};

/// How many blocks ahead data-independent addressing prefetches its references.
pub(crate) const AHEAD: u32 = 4;

/// One block compression G (RFC 9106 section 3.5).
pub(crate) trait Compress: Copy + Send + Sync {
    /// `out = G(prev, refb)`, XORed into `out`'s previous content when `xor`. Calls `hint`
    /// with the first word of the result before the rest of it is stored.
    fn compress(
        self,
        prev: &Block,
        refb: &Block,
        out: &mut Block,
        xor: bool,
        hint: impl FnOnce(u64),
    );

    /// [`Compress::compress`] when the next reference depends on this block's first
    /// word (data-dependent addressing): a kernel may then finish that word before the
    /// rest, at some cost to the whole (see `argon2_avx512.rs`).
    #[inline(always)]
    fn compress_dependent(
        self,
        prev: &Block,
        refb: &Block,
        out: &mut Block,
        xor: bool,
        hint: impl FnOnce(u64),
    ) {
        self.compress(prev, refb, out, xor, hint);
    }

    /// Ask the memory system for `block` ahead of its use (a no-op where unsupported).
    fn prefetch(self, block: &Block);
}

/// The shape of one hash's memory walk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    pub variant: Variant,
    /// Version 0x13: passes after the first XOR into the old block.
    pub xor_later_passes: bool,
    pub lanes: u32,
    pub lane_len: u32,
    pub passes: u32,
}

impl Geometry {
    pub(crate) fn segment_len(&self) -> u32 {
        self.lane_len / 4
    }
}

/// One lane's segment of one slice, with read access to every finished segment.
pub(crate) struct Segment<'a> {
    pub geo: &'a Geometry,
    pub pass: u32,
    pub slice: u32,
    pub lane: u32,
    /// This lane's segment of the current slice (written).
    pub own: &'a mut [Block],
    /// Every segment, index `lane * 4 + slice`; the current slice's entries are empty.
    pub others: &'a [&'a [Block]],
}

/// Data-independent addressing state: the input block Z and the current address block.
struct Addresses {
    input: Block,
    block: Block,
}

impl Addresses {
    fn new(geo: &Geometry, pass: u32, lane: u32, slice: u32) -> Addresses {
        let mut input = Block::ZERO;
        input.0[0] = u64::from(pass);
        input.0[1] = u64::from(lane);
        input.0[2] = u64::from(slice);
        input.0[3] = u64::from(geo.lane_len) * u64::from(geo.lanes);
        input.0[4] = u64::from(geo.passes);
        input.0[5] = geo.variant as u64;
        Addresses {
            input,
            block: Block::ZERO,
        }
    }

    /// The next 128 pseudo-random values: G(0, G(0, Z)) with Z's counter incremented.
    #[inline(always)]
    fn next<C: Compress>(&mut self, c: C) {
        self.input.0[6] += 1;
        c.compress(&Block::ZERO, &self.input, &mut self.block, false, |_| {});
        let first = self.block;
        c.compress(&Block::ZERO, &first, &mut self.block, false, |_| {});
    }
}

/// The segment being filled, without its memory.
#[derive(Clone, Copy)]
struct Pos<'a> {
    geo: &'a Geometry,
    pass: u32,
    slice: u32,
    lane: u32,
}

/// Where block `index` (position in the segment) of `s` takes its reference, from its
/// pseudo-random word: `(lane, segment index, offset in segment)`.
#[inline(always)]
fn reference(s: Pos<'_>, index: u32, rand: u64) -> (usize, usize, usize) {
    let geo = s.geo;
    let seg_len = geo.segment_len();
    let j1 = rand & 0xffff_ffff;
    let j2 = rand >> 32;
    let ref_lane = if (s.pass == 0 && s.slice == 0) || geo.lanes == 1 {
        s.lane
    } else {
        (j2 % u64::from(geo.lanes)) as u32
    };
    let same = ref_lane == s.lane;
    // Size of the reference area (RFC 9106 section 3.4.2): every finished block this lane
    // may see, minus the previous block (which is already an input of G).
    let area = if s.pass == 0 {
        if same {
            s.slice * seg_len + index - 1
        } else {
            s.slice * seg_len - u32::from(index == 0)
        }
    } else if same {
        geo.lane_len - seg_len + index - 1
    } else {
        geo.lane_len - seg_len - u32::from(index == 0)
    };
    let x = (j1 * j1) >> 32;
    let y = ((u64::from(area) * x) >> 32) as u32;
    let relative = area - 1 - y;
    let start = if s.pass == 0 || s.slice == 3 {
        0
    } else {
        (s.slice + 1) * seg_len
    };
    // start + relative < 2 lane_len: a subtraction, not a 64-bit division (this runs
    // once per block, and a division costs as much as a tenth of the compression).
    let mut absolute = start + relative;
    if absolute >= geo.lane_len {
        absolute -= geo.lane_len;
    }
    // The segment by three comparisons, not a division: this is on the critical path of
    // data-dependent addressing (the previous block's first word -> this index -> the
    // reference block's loads), where a 32-bit `div` costs more than the rest of it.
    let seg = u32::from(absolute >= seg_len)
        + u32::from(absolute >= 2 * seg_len)
        + u32::from(absolute >= 3 * seg_len);
    (
        ref_lane as usize,
        seg as usize,
        (absolute - seg * seg_len) as usize,
    )
}

/// Fill one segment with compression `c`.
#[inline(always)]
pub(crate) fn fill_segment<C: Compress>(c: C, seg: Segment<'_>) {
    let Segment {
        geo,
        pass,
        slice,
        lane,
        own,
        others,
    } = seg;
    let s = Pos {
        geo,
        pass,
        slice,
        lane,
    };
    let seg_len = geo.segment_len();
    let independent = match geo.variant {
        Variant::I => true,
        Variant::D => false,
        Variant::Id => s.pass == 0 && s.slice < 2,
    };
    let xor = geo.xor_later_passes && s.pass != 0;
    let lane = s.lane as usize;
    let mut addresses = independent.then(|| Addresses::new(geo, s.pass, s.lane, s.slice));
    let mut first = 0;
    if s.pass == 0 && s.slice == 0 {
        // Blocks 0 and 1 come from H'; their pseudo-random values are skipped.
        first = 2;
        if let Some(a) = addresses.as_mut() {
            a.next(c);
        }
    }
    // The previous block of the first one computed here.
    let prev_seg: &[Block] = if first > 0 {
        &[]
    } else {
        let prev_slice = (s.slice + 3) % 4;
        others[lane * 4 + prev_slice as usize]
    };
    let start_rand = if first > 0 {
        own[1].0[0]
    } else {
        prev_seg[seg_len as usize - 1].0[0]
    };
    let ctx = Ctx {
        s,
        xor,
        first,
        prev_seg,
        others,
    };
    // Two loops, not one with a branch per block: each then holds one copy of the
    // unrolled compression and no code of the other addressing mode (measured on Zen 4:
    // the merged loop with both compression orders was 5-10% slower in L2).
    match addresses {
        Some(a) => fill_independent(c, &ctx, own, a),
        None => fill_dependent(c, &ctx, own, start_rand),
    }
}

/// What both fill loops share about the segment.
struct Ctx<'a> {
    s: Pos<'a>,
    xor: bool,
    /// First index computed here (2 in the first segment of a lane, else 0).
    first: u32,
    /// The previous segment of this lane (empty when `first > 0`).
    prev_seg: &'a [Block],
    others: &'a [&'a [Block]],
}

impl Ctx<'_> {
    /// The previous block of `index` and the reference block at `(ref_lane, ref_seg,
    /// ref_off)`, from `done` (this segment's finished blocks) or the other segments.
    #[inline(always)]
    fn inputs<'b>(
        &'b self,
        done: &'b [Block],
        index: usize,
        (ref_lane, ref_seg, ref_off): (usize, usize, usize),
    ) -> (&'b Block, &'b Block) {
        let prev = if index == 0 {
            &self.prev_seg[self.prev_seg.len() - 1]
        } else {
            &done[index - 1]
        };
        let refb = if ref_lane == self.s.lane as usize && ref_seg == self.s.slice as usize {
            &done[ref_off]
        } else {
            &self.others[ref_lane * 4 + ref_seg][ref_off]
        };
        (prev, refb)
    }

    /// Prefetch the reference block `(l, sg, off)`. A block of this lane's current
    /// segment can be prefetched only once written (it is then in `done`); one not yet
    /// written will be in L1 when it is needed.
    #[inline(always)]
    fn prefetch<C: Compress>(&self, c: C, done: &[Block], (l, sg, off): (usize, usize, usize)) {
        if !(l == self.s.lane as usize && sg == self.s.slice as usize) {
            c.prefetch(&self.others[l * 4 + sg][off]);
        } else if let Some(b) = done.get(off) {
            c.prefetch(b);
        }
    }
}

/// Data-dependent addressing: each reference comes from the previous block's first word,
/// so the hint computes the next one and prefetches it while this block is finished.
#[inline(always)]
fn fill_dependent<C: Compress>(c: C, ctx: &Ctx<'_>, own: &mut [Block], mut rand: u64) {
    let s = ctx.s;
    let seg_len = s.geo.segment_len();
    let mut cached = None;
    for index in ctx.first..seg_len {
        let i = index as usize;
        let r = match cached.take() {
            Some(r) => r,
            None => reference(s, index, rand),
        };
        let (done, rest) = own.split_at_mut(i);
        let (prev, refb) = ctx.inputs(done, i, r);
        let next = index + 1;
        let mut next_ref = None;
        let hint = |w0: u64| {
            if next < seg_len {
                // The block being written is never a reference of the next one.
                let r = reference(s, next, w0);
                next_ref = Some(r);
                ctx.prefetch(c, done, r);
            }
        };
        c.compress_dependent(prev, refb, &mut rest[0], ctx.xor, hint);
        cached = next_ref;
        rand = rest[0].0[0];
    }
}

/// Data-independent addressing: the references of a whole address block (128 blocks)
/// are known when it is computed, so the hint of block `i` prefetches the reference of
/// block `i + AHEAD` (inside the current address block), and the first few of each
/// address block are prefetched when it is computed.
#[inline(always)]
fn fill_independent<C: Compress>(c: C, ctx: &Ctx<'_>, own: &mut [Block], mut a: Addresses) {
    let s = ctx.s;
    let seg_len = s.geo.segment_len();
    let mut fresh = ctx.first > 0;
    // The next block's reference, computed in the hint: the loop's next iteration is some
    // 600 instructions away, beyond the out-of-order window, so an index computed there
    // would delay the reference loads (5 ns per block in L2 on Zen 4).
    let mut cached = None;
    for index in ctx.first..seg_len {
        let i = index as usize;
        if i.is_multiple_of(BLOCK_WORDS) {
            a.next(c);
            fresh = true;
        }
        let rand_of = |j: u32| a.block.0[j as usize % BLOCK_WORDS];
        let r = match cached.take() {
            Some(r) => r,
            None => reference(s, index, rand_of(index)),
        };
        let (done, rest) = own.split_at_mut(i);
        let (prev, refb) = ctx.inputs(done, i, r);
        // The last index of the current address block in this segment.
        let block_end = (index | (BLOCK_WORDS as u32 - 1)).min(seg_len - 1);
        if fresh {
            fresh = false;
            for j in index + 1..(index + AHEAD).min(block_end + 1) {
                ctx.prefetch(c, done, reference(s, j, rand_of(j)));
            }
        }
        let (far, next) = (index + AHEAD, index + 1);
        let mut next_ref = None;
        let hint = |_: u64| {
            if far <= block_end {
                ctx.prefetch(c, done, reference(s, far, rand_of(far)));
            }
            // The next address block is computed only when reached.
            if next <= block_end {
                next_ref = Some(reference(s, next, rand_of(next)));
            }
        };
        c.compress(prev, refb, &mut rest[0], ctx.xor, hint);
        cached = next_ref;
    }
}
