//! Known-answer tests of the kernel itself (the random differential tests against
//! RustCrypto and libargon2 are in `tests/argon2_kernel.rs`).

#![allow(clippy::unwrap_used)]

use super::*;

fn tag(variant: Variant, version: Version, backend: Backend, lanes: &dyn LaneExecutor) -> String {
    let params = Params {
        variant,
        version,
        m_cost: 32,
        t_cost: 3,
        p_cost: 4,
        secret: &[3; 8],
        ad: &[4; 12],
    };
    let mut out = [0u8; 32];
    hash_into(&params, &[1; 32], &[2; 16], &mut out, backend, lanes).unwrap();
    hex::encode(out)
}

/// RFC 9106 section 5 (version 0x13) and the reference implementation's 0x10 vectors
/// (same inputs: m=32, t=3, p=4, password 32 x 01, salt 16 x 02, secret 8 x 03, ad 12 x 04).
const VECTORS: [(Variant, Version, &str); 6] = [
    (
        Variant::D,
        Version::V0x13,
        "512b391b6f1162975371d30919734294f868e3be3984f3c1a13a4db9fabe4acb",
    ),
    (
        Variant::I,
        Version::V0x13,
        "c814d9d1dc7f37aa13f0d77f2494bda1c8de6b016dd388d29952a4c4672b6ce8",
    ),
    (
        Variant::Id,
        Version::V0x13,
        "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659",
    ),
    (
        Variant::D,
        Version::V0x10,
        "96a9d4e5a1734092c85e29f410a45914a5dd1f5cbf08b2670da68a0285abf32b",
    ),
    (
        Variant::I,
        Version::V0x10,
        "87aeedd6517ab830cd9765cd8231abb2e647a5dee08f7c05e02fcb763335d0fd",
    ),
    (
        Variant::Id,
        Version::V0x10,
        "b64615f07789b66b645b67ee9ed3b377ae350b6bfcbb0fc95141ea8f322613c0",
    ),
];

#[test]
fn rfc_9106_vectors_on_every_kernel_serial_and_threaded() {
    for backend in backends() {
        for (variant, version, want) in VECTORS {
            assert_eq!(
                tag(variant, version, backend, &Serial),
                want,
                "{variant:?} {version:?} {backend:?}"
            );
            assert_eq!(
                tag(variant, version, backend, &ScopedThreads),
                want,
                "{variant:?} {version:?} {backend:?} threaded"
            );
        }
    }
}

#[test]
fn issue_26_lanes_lent_to_other_threads_give_the_reference_tags() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Each offer is helped by a thread of its own for exactly one lane before the lender
    // runs the rest: deterministic, and every slice has a lane filled elsewhere.
    let helped = AtomicUsize::new(0);
    let elsewhere = Lent(|work: LaneWork| {
        std::thread::scope(|s| {
            s.spawn(|| {
                if work.help() {
                    helped.fetch_add(1, Ordering::Relaxed);
                }
            });
        });
    });
    // Nobody helps: the lender runs every lane itself and still finishes.
    let nobody = Lent(|_work: LaneWork| {});
    for backend in backends() {
        for (variant, version, want) in VECTORS {
            let before = helped.load(Ordering::Relaxed);
            assert_eq!(tag(variant, version, backend, &elsewhere), want);
            // t = 3 passes x 4 slices, one lane of each on a helper.
            assert_eq!(helped.load(Ordering::Relaxed) - before, 12);
            assert_eq!(tag(variant, version, backend, &nobody), want);
        }
    }
    // A handle kept after its slice ended holds nothing.
    let kept = std::sync::Mutex::new(Vec::new());
    let keep = Lent(|work: LaneWork| kept.lock().unwrap().push(work));
    tag(Variant::Id, Version::V0x13, Backend::Auto, &keep);
    let kept = kept.into_inner().unwrap();
    assert_eq!(kept.len(), 12);
    assert!(kept.iter().all(|w| w.exhausted() && !w.help()));
}

#[test]
fn long_tags_use_h_prime_chaining() {
    // Lengths around the 64-byte boundary and the 32-byte steps of H'.
    for len in [4usize, 63, 64, 65, 96, 97, 128, 1024] {
        let params = Params {
            variant: Variant::Id,
            version: Version::V0x13,
            m_cost: 16,
            t_cost: 1,
            p_cost: 1,
            secret: &[],
            ad: &[],
        };
        let mut a = vec![0u8; len];
        hash_into(
            &params,
            b"pw",
            b"saltsalt",
            &mut a,
            Backend::Portable,
            &Serial,
        )
        .unwrap();
        let reference = argon2::Argon2::new(
            argon2::Algorithm::Argon2id,
            argon2::Version::V0x13,
            argon2::Params::new(16, 1, 1, Some(len)).unwrap(),
        );
        let mut b = vec![0u8; len];
        reference
            .hash_password_into(b"pw", b"saltsalt", &mut b)
            .unwrap();
        assert_eq!(a, b, "tag length {len}");
    }
}

#[test]
fn arena_is_wiped_after_a_hash() {
    let params = Params {
        variant: Variant::D,
        version: Version::V0x13,
        m_cost: 64,
        t_cost: 1,
        p_cost: 1,
        secret: &[],
        ad: &[],
    };
    let mut out = [0u8; 32];
    hash_into(
        &params,
        b"pw",
        b"saltsalt",
        &mut out,
        Backend::Auto,
        &Serial,
    )
    .unwrap();
    ARENA.with(|cell| {
        let mut arena = cell.borrow_mut();
        let blocks = arena.blocks(64).unwrap();
        assert!(blocks.iter().all(|b| b.0.iter().all(|&w| w == 0)));
    });
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    let mut out = [0u8; 32];
    for (m, t, p) in [(7, 1, 1), (15, 1, 2), (64, 0, 1), (64, 1, 0)] {
        let params = Params {
            variant: Variant::Id,
            version: Version::V0x13,
            m_cost: m,
            t_cost: t,
            p_cost: p,
            secret: &[],
            ad: &[],
        };
        assert!(hash_into(&params, b"", b"saltsalt", &mut out, Backend::Auto, &Serial).is_err());
    }
}

/// The wipe contest runs on the process's own hashes: after a few hundred automatic hashes
/// on one thread both wipe modes have recorded runs (each a wipe and the hash after it),
/// where the target offers two and a thread CPU clock exists.
#[test]
fn issue_26_both_wipe_modes_are_measured_in_service() {
    if crate::arch::mem::Wipe::ALL.len() < 2 || crate::thread_cpu_ns().is_none() {
        return;
    }
    let params = Params {
        variant: Variant::Id,
        version: Version::V0x13,
        m_cost: 1024,
        t_cost: 1,
        p_cost: 1,
        secret: &[],
        ad: &[],
    };
    let mut out = [0u8; 32];
    for i in 0u32..600 {
        hash_into(
            &params,
            &i.to_le_bytes(),
            b"saltsalt",
            &mut out,
            Backend::Auto,
            &Serial,
        )
        .unwrap();
    }
    let (rows, now, _) = wipes_in_service();
    let names: Vec<&str> = rows.iter().map(|r| r.0).collect();
    assert!(
        names.contains(&"in-cache") && names.contains(&"streaming"),
        "measured: {rows:?}"
    );
    assert!(
        rows.iter().all(|r| r.2.is_finite() && r.2 > 0.0),
        "{rows:?}"
    );
    assert!(now == "in-cache" || now == "streaming");
}
