//! Differential tests of the batch kernel: every lane of every batch size, on every code
//! path this CPU offers, against the RustCrypto `pbkdf2` crate and our single-stream
//! kernel; plus RFC 6070 vectors and the planner against brute force.

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

use super::*;
use crate::pbkdf2::pbkdf2_hmac;

/// Widest kernel is 16 lanes; 33 covers two full groups and a remainder.
const MAX_BATCH: usize = 33;

fn reference(prf: Prf, password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
    match prf {
        Prf::Sha1 => ::pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, out),
        Prf::Sha256 => ::pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, out),
        Prf::Sha512 => ::pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password, salt, iterations, out),
    }
}

/// Random inputs for one batch: passwords up to 2.5 blocks (so some are hashed into the
/// key), salts up to 2.5 blocks, outputs of 0..=3 digests plus odd lengths.
struct Inputs {
    passwords: Vec<Vec<u8>>,
    salts: Vec<Vec<u8>>,
    out_lens: Vec<usize>,
}

fn inputs(rng: &mut StdRng, prf: Prf, n: usize, one_block: bool) -> Inputs {
    let block = prf.block_len();
    let hlen = prf.output_len();
    let mut passwords = Vec::new();
    let mut salts = Vec::new();
    let mut out_lens = Vec::new();
    for _ in 0..n {
        let mut p = vec![0u8; rng.random_range(0..=block * 5 / 2)];
        rng.fill_bytes(&mut p);
        let mut s = vec![0u8; rng.random_range(0..=block * 5 / 2)];
        rng.fill_bytes(&mut s);
        let len = if one_block {
            rng.random_range(1..=hlen)
        } else {
            match rng.random_range(0..4) {
                0 => hlen,
                1 => rng.random_range(0..=3 * hlen),
                2 => hlen * rng.random_range(1..=3),
                _ => hlen * rng.random_range(1..=2) + 1,
            }
        };
        passwords.push(p);
        salts.push(s);
        out_lens.push(len);
    }
    Inputs {
        passwords,
        salts,
        out_lens,
    }
}

/// Derive `inp` as one batch on `backend` (`None`: the planner) and compare every job with
/// both references.
fn check(prf: Prf, backend: Option<Backend>, iterations: u32, inp: &Inputs, seed: u64) {
    let mut outs: Vec<Vec<u8>> = inp.out_lens.iter().map(|&l| vec![0xAA; l]).collect();
    let mut jobs: Vec<Job<'_>> = inp
        .passwords
        .iter()
        .zip(&inp.salts)
        .zip(outs.iter_mut())
        .map(|((p, s), o)| Job {
            password: p,
            salt: s,
            out: o,
        })
        .collect();
    match backend {
        Some(b) => derive_on(b, prf, iterations, &mut jobs).expect("backend listed as available"),
        None => derive(prf, iterations, &mut jobs),
    }
    drop(jobs);
    for (lane, out) in outs.iter().enumerate() {
        let (p, s) = (&inp.passwords[lane], &inp.salts[lane]);
        let mut want = vec![0u8; out.len()];
        reference(prf, p, s, iterations, &mut want);
        let mut ours = vec![0u8; out.len()];
        pbkdf2_hmac(prf, p, s, iterations, &mut ours);
        let ctx = format!(
            "prf {prf:?} backend {backend:?} batch {} lane {lane} iterations {iterations} \
             password {} B salt {} B out {} B seed {seed:#x}",
            inp.out_lens.len(),
            p.len(),
            s.len(),
            out.len()
        );
        assert_eq!(out, &want, "vs RustCrypto: {ctx}");
        assert_eq!(out, &ours, "vs pbkdf2_hmac: {ctx}");
    }
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn all_prfs() -> [Prf; 3] {
    [Prf::Sha1, Prf::Sha256, Prf::Sha512]
}

/// Every forced backend the CPU offers, every batch size 1..=17, one-block outputs (the
/// stored-hash case: one job = one lane).
#[test]
fn issue_3_every_backend_every_batch_size_matches_references() {
    let seed = 0x5eed_0003;
    let mut rng = StdRng::seed_from_u64(seed);
    for prf in all_prfs() {
        let available = backends(prf);
        assert!(available.contains(&Backend::Single));
        assert!(available.contains(&Backend::Scalar));
        for backend in available {
            for n in 1..=MAX_BATCH {
                let iterations = rng.random_range(1..=40);
                let inp = inputs(&mut rng, prf, n, true);
                check(prf, Some(backend), iterations, &inp, seed);
            }
        }
    }
}

/// Mixed output lengths (0, partial, several blocks): a job of k blocks is k lanes, which
/// may land in different groups and kernels.
#[test]
fn issue_3_mixed_output_lengths_on_every_backend() {
    let seed = 0x5eed_0103;
    let mut rng = StdRng::seed_from_u64(seed);
    for prf in all_prfs() {
        for backend in backends(prf) {
            for n in [1, 2, 3, 5, 9] {
                // c = 1 (no kernel iterations at all) and c = 2 (exactly one) are the
                // edges of the lane loops.
                for iterations in [1, 2, rng.random_range(3..=20)] {
                    let inp = inputs(&mut rng, prf, n, false);
                    check(prf, Some(backend), iterations, &inp, seed);
                }
            }
        }
    }
}

/// The planner's mix of kernels ([`derive`]) for every batch size, with a fresh random
/// seed each run (printed on failure) on top of a fixed one.
#[test]
fn issue_3_planned_derive_matches_references() {
    let fresh = StdRng::from_os_rng().next_u64();
    for seed in [0x5eed_0203, fresh] {
        let mut rng = StdRng::seed_from_u64(seed);
        for prf in all_prfs() {
            for n in 1..=MAX_BATCH {
                let iterations = rng.random_range(1..=30);
                let one_block = n % 2 == 0;
                let inp = inputs(&mut rng, prf, n, one_block);
                check(prf, None, iterations, &inp, seed);
            }
        }
    }
}

/// Longer chains (thousands of iterations) on every path, where a schedule or state bug
/// that cancels out in a few rounds would show.
#[test]
fn issue_3_long_chains_on_every_backend() {
    let seed = 0x5eed_0303;
    let mut rng = StdRng::seed_from_u64(seed);
    for prf in all_prfs() {
        for backend in backends(prf) {
            let n = rng.random_range(5..=9);
            let inp = inputs(&mut rng, prf, n, true);
            check(prf, Some(backend), 4096, &inp, seed);
        }
    }
}

/// RFC 6070 PBKDF2-HMAC-SHA1 vectors, all in one batch, on every SHA-1 path.
#[test]
fn issue_3_rfc6070_vectors_in_one_batch() {
    let cases: [(&[u8], &[u8], u32, &str); 4] = [
        (
            b"password",
            b"salt",
            1,
            "0c60c80f961f0e71f3a9b524af6012062fe037a6",
        ),
        (
            b"password",
            b"salt",
            2,
            "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957",
        ),
        (
            b"password",
            b"salt",
            4096,
            "4b007901b765489abead49d926f721d065a429c1",
        ),
        (
            b"passwordPASSWORDpassword",
            b"saltSALTsaltSALTsaltSALTsaltSALTsalt",
            4096,
            "3d2eec4fe41c849b80c8d83662c0e44a8b291a964cf2f07038",
        ),
    ];
    for backend in backends(Prf::Sha1) {
        // Same iteration count per call (the batch contract): group the vectors.
        for iterations in [1, 2, 4096] {
            let group: Vec<_> = cases.iter().filter(|c| c.2 == iterations).collect();
            let mut outs: Vec<Vec<u8>> = group.iter().map(|c| vec![0; c.3.len() / 2]).collect();
            let mut jobs: Vec<Job<'_>> = group
                .iter()
                .zip(outs.iter_mut())
                .map(|(c, o)| Job {
                    password: c.0,
                    salt: c.1,
                    out: o,
                })
                .collect();
            derive_on(backend, Prf::Sha1, iterations, &mut jobs).expect("available");
            drop(jobs);
            for (c, o) in group.iter().zip(&outs) {
                assert_eq!(to_hex(o), c.3, "{backend:?} {iterations}");
            }
        }
    }
}

/// The CPU's vector kernels are really offered (else the differential tests above would
/// quietly cover only the single-stream loops). Feature detection here is std's, not ours.
#[cfg(target_arch = "x86_64")]
#[test]
fn issue_3_cpu_kernels_are_offered_and_planned() {
    if std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1") {
        for prf in [Prf::Sha1, Prf::Sha256] {
            let b = backends(prf);
            for want in [
                Backend::ShaNiX2,
                Backend::ShaNiX3,
                Backend::ShaNiX4,
                Backend::ShaNiSseX4,
            ] {
                assert!(b.contains(&want), "{prf:?} lacks {want:?}");
            }
            assert!(preferred_batch(prf) > 1);
            assert!(plan_for(prf, 4).iter().all(|(b, _)| *b != Backend::Single));
        }
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        for prf in [Prf::Sha1, Prf::Sha256] {
            assert!(backends(prf).contains(&Backend::Avx512X16), "{prf:?}");
        }
        assert!(backends(Prf::Sha512).contains(&Backend::Avx512X8));
        assert_eq!(preferred_batch(Prf::Sha512), 8);
        assert_eq!(plan_for(Prf::Sha512, 8), vec![(Backend::Avx512X8, 8)]);
        if std::arch::is_x86_feature_detected!("avx512vl") {
            for prf in [Prf::Sha1, Prf::Sha256] {
                assert!(backends(prf).contains(&Backend::Avx512VlX8), "{prf:?}");
            }
        }
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(backends(Prf::Sha256).contains(&Backend::Avx2X8));
        assert!(backends(Prf::Sha512).contains(&Backend::Avx2X4));
    }
}

/// Forcing a kernel the PRF cannot use is an error, not a wrong answer or a panic.
#[test]
fn issue_3_unavailable_backend_is_an_error() {
    let mut out = [0u8; 32];
    let mut jobs = [Job {
        password: b"p",
        salt: b"s",
        out: &mut out,
    }];
    assert!(derive_on(Backend::Avx512X8, Prf::Sha256, 1, &mut jobs).is_err());
    assert!(derive_on(Backend::ShaNiX4, Prf::Sha512, 1, &mut jobs).is_err());
    assert!(!backends(Prf::Sha512).contains(&Backend::ShaNiX2));
    assert!(!backends(Prf::Sha1).contains(&Backend::Avx2X4));
    assert!(derive_on(Backend::Avx512X16, Prf::Sha512, 1, &mut jobs).is_err());
    assert!(!backends(Prf::Sha512).contains(&Backend::Avx2X8));
    assert!(derive_on(Backend::Avx512VlX8, Prf::Sha512, 1, &mut jobs).is_err());
}

/// The planner finds the cheapest split, checked against exhaustive search.
#[test]
fn issue_3_plan_is_optimal() {
    fn brute(menu: &[MenuItem], n: usize) -> u64 {
        if n == 0 {
            return 0;
        }
        menu.iter()
            .map(|o| u64::from(o.cost()) + brute(menu, n - o.width.min(n)))
            .min()
            .unwrap_or(u64::MAX)
    }
    let item = |kernel, width, cost| MenuItem::new(kernel, width, cost, 0.0);
    let single = || item(Kernel::Single, 1, SINGLE_COST);
    let menus = [
        vec![
            single(),
            item(Kernel::ShaNi(2), 2, 1060),
            item(Kernel::ShaNi(3), 3, 1350),
            item(Kernel::ShaNi(4), 4, 1750),
            item(Kernel::Avx512X16, 16, 5400),
            item(Kernel::Avx2X8, 8, 6100),
        ],
        vec![
            single(),
            item(Kernel::Avx512X8, 8, 2440),
            item(Kernel::Avx2X4, 4, 2890),
        ],
        vec![single(), item(Kernel::ShaNi(3), 3, 1500)],
    ];
    for menu in &menus {
        for n in 0..=20 {
            let groups = plan(menu, n);
            assert_eq!(groups.iter().map(|g| g.1).sum::<usize>(), n);
            let cost: u64 = groups
                .iter()
                .map(|(k, take)| {
                    let o = menu.iter().find(|o| o.kernel == *k).expect("from menu");
                    assert!(*take >= 1 && *take <= o.width);
                    u64::from(o.cost())
                })
                .sum();
            assert_eq!(cost, brute(menu, n), "n = {n}");
        }
    }
}

/// Zero jobs, and jobs with empty outputs, are no-ops (no lanes), mixed with real ones.
#[test]
fn issue_3_empty_outputs_take_no_lanes() {
    for prf in all_prfs() {
        let mut empty: [u8; 0] = [];
        let mut real = vec![0u8; prf.output_len()];
        let mut jobs = [
            Job {
                password: b"a",
                salt: b"b",
                out: &mut empty,
            },
            Job {
                password: b"pw",
                salt: b"salt",
                out: &mut real,
            },
        ];
        derive(prf, 3, &mut jobs);
        derive(prf, 3, &mut []);
        let mut want = vec![0u8; prf.output_len()];
        reference(prf, b"pw", b"salt", 3, &mut want);
        assert_eq!(real, want);
    }
}

/// The `Debug` of a job never shows the password or the derived key.
#[test]
fn job_debug_is_redacted() {
    let mut out = *b"derived-key-bytes";
    let job = Job {
        password: b"hunter2-secret",
        salt: b"s",
        out: &mut out,
    };
    let text = format!("{job:?}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("104"), "{text}"); // 'h' as a byte list
    assert!(!text.contains("derived"), "{text}");
}

/// Issue 26: start-up ranked avx512-x16 first (a busy window), the work shows shani-x4
/// faster per chain; once the contest moves, the planner, the preferred width and the
/// calibration report all follow, and the single stream's unit cost is untouched.
#[test]
fn issue_26_an_in_service_switch_moves_the_plan() {
    // ns per iteration of a full group; per chain: single 1.0, shani-x4 0.45, avx512 0.41.
    let menu = Menu::new(vec![
        MenuItem::new(Kernel::Single, 1, SINGLE_COST, 100.0),
        MenuItem::new(Kernel::ShaNi(4), 4, 1800, 180.0),
        MenuItem::new(Kernel::Avx512X16, 16, 6560, 656.0),
    ]);
    if crate::thread_cpu_ns().is_none() {
        return; // No contest without a thread CPU clock (not Linux).
    }
    assert_eq!(best_item(&menu.items).map(|o| o.width), Some(16));
    assert_eq!(plan(&menu.items, 16), vec![(Kernel::Avx512X16, 16)]);
    let (shani, avx) = (
        menu.candidate(1).expect("x4"),
        menu.candidate(2).expect("x16"),
    );
    // In service: avx512-x16 takes 0.45 ns per chain-iteration, shani-x4 0.40.
    for _ in 0..crate::contest::MIN_SAMPLES {
        menu.record(avx, 45.0);
    }
    for _ in 1..crate::contest::MIN_SAMPLES {
        menu.record(shani, 40.0);
    }
    assert_eq!(
        plan(&menu.items, 16),
        vec![(Kernel::Avx512X16, 16)],
        "too few runs yet"
    );
    menu.record(shani, 40.0);
    assert_eq!(best_item(&menu.items).map(|o| o.width), Some(4));
    assert_eq!(plan(&menu.items, 16), vec![(Kernel::ShaNi(4), 4); 4]);
    assert_eq!(menu.items[0].cost(), SINGLE_COST);
    // Re-based on avx512's cost by the measured ratio: 6560/16 * 4 * 40/45.
    assert_eq!(menu.items[1].cost(), 1458);
    let (rows, switches) = menu.in_service();
    assert_eq!(switches, 1);
    assert_eq!(rows.len(), 2);
}

/// Issue 26: with a narrow kernel current, batches are gathered at its width, so a wider
/// challenger could never run a full group; the menu asks for one wide batch instead.
#[test]
fn issue_26_a_wider_challenger_gets_a_batch_it_fits() {
    let menu = Menu::new(vec![
        MenuItem::new(Kernel::Single, 1, SINGLE_COST, 100.0),
        MenuItem::new(Kernel::ShaNi(4), 4, 1640, 164.0),
        MenuItem::new(Kernel::Avx512X16, 16, 7200, 720.0),
    ]);
    if crate::thread_cpu_ns().is_none() {
        return;
    }
    assert_eq!(menu.preferred_width(), 4);
    let mut explored = None;
    for _ in 0..crate::contest::EXPLORE_EVERY {
        assert_eq!(
            menu.explore(4, 100_000),
            None,
            "nothing but shani-x4 fits four chains"
        );
    }
    assert_eq!(
        menu.preferred_width(),
        16,
        "the challenger waits for a wide batch"
    );
    for _ in 0..3 {
        explored = explored.or(menu.explore(16, 100_000));
    }
    assert_eq!(
        explored,
        Some(2),
        "avx512-x16 runs on the first batch it fits"
    );
    assert_eq!(menu.preferred_width(), 4);
    assert_eq!(menu.explore(16, 10), None, "too few iterations to time");
}

/// Issue 26: a start-up choice forced onto avx512-x16 (as a busy window made it on Zen 4)
/// is planned as the best kernel until the work shows shani-x4 faster, and then left.
#[test]
fn issue_26_a_forced_wrong_start_is_planned_and_then_corrected() {
    let menu = Menu::new(vec![
        MenuItem::new(Kernel::Single, 1, SINGLE_COST, 100.0),
        MenuItem::new(Kernel::ShaNi(4), 4, 1640, 164.0),
        MenuItem::new(Kernel::Avx512X16, 16, 7200, 720.0),
    ]);
    if crate::thread_cpu_ns().is_none() {
        return;
    }
    assert_eq!(best_item(&menu.items).map(|o| o.width), Some(4));
    assert!(
        !menu.start_on(0),
        "the single stream is not a contest candidate"
    );
    assert!(menu.start_on(2));
    assert_eq!(best_item(&menu.items).map(|o| o.width), Some(16));
    assert_eq!(
        menu.items[2].cost(),
        6363,
        "3% per chain under shani-x4's 1640 / 4"
    );
    let (shani, avx) = (
        menu.candidate(1).expect("x4"),
        menu.candidate(2).expect("x16"),
    );
    // In service: avx512-x16 0.45 per chain, shani-x4 0.41 (the issue's 9%).
    for i in 0..crate::contest::MIN_SAMPLES {
        let wobble = (i % 3) as f64 * 0.2;
        menu.record(avx, 45.0 + wobble);
        menu.record(shani, 41.0 + wobble);
    }
    assert_eq!(best_item(&menu.items).map(|o| o.width), Some(4));
    assert_eq!(menu.in_service().1, 1);
}
