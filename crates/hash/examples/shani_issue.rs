//! How fast `sha256rnds2` issues on this CPU, with the dependency pattern of a real
//! compression, for 1..=4 interleaved chains and with the message-schedule instructions
//! mixed in: the figures behind the batch kernel's design (ARCHITECTURE.md, "Batch
//! kernel").
//!
//! ```text
//! taskset -c 1 cargo run --release -p portcullis-hash --example shani_issue
//! ```
//!
//! Each chain alternates `cdgh = rnds2(cdgh, abef)` and `abef = rnds2(abef, cdgh)` with
//! `W + K` loaded into the implicit `xmm0`, as the PBKDF2 kernels do. Printed: core cycles
//! per `sha256rnds2` (the clock speed cancelled out, `common/cycles.rs`). One chain shows
//! the latency; the most chains show the issue rate the batch kernels live under.

#[path = "common/cycles.rs"]
mod cycles;

use std::process::ExitCode;

use cycles::{median, seconds_per_cycle, thread_seconds};

#[cfg(target_arch = "x86_64")]
mod probe {
    use std::arch::asm;

    /// `W + K` stand-ins: the values do not matter, only that they come from memory.
    #[repr(align(16))]
    pub struct Wk(#[allow(dead_code)] pub [u8; 16]);

    /// Rounds per asm repetition: each chain does two `sha256rnds2` per repetition.
    pub const REPS: u64 = 16;

    /// One probe: `$extra` after every `sha256rnds2`, chains given as (ABEF, CDGH) register
    /// number pairs.
    macro_rules! probe {
        ($wk:expr, $extra:expr, [$(($a:literal, $c:literal)),+]) => {
            // SAFETY: SHA-NI and AVX checked by the caller; the asm reads 16 bytes at
            // `$wk` and writes only the registers it declares.
            unsafe {
                asm!(
                    ".rept 16",
                    $(concat!(
                        "vmovdqa xmm0, xmmword ptr [{wk}]\n",
                        "sha256rnds2 xmm", $c, ", xmm", $a, ", xmm0\n",
                        $extra,
                    ),)+
                    $(concat!(
                        "vpshufd xmm0, xmmword ptr [{wk}], 0x0e\n",
                        "sha256rnds2 xmm", $a, ", xmm", $c, ", xmm0\n",
                        $extra,
                    ),)+
                    ".endr",
                    wk = in(reg) $wk,
                    out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
                    out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                    out("xmm8") _, out("xmm10") _, out("xmm11") _,
                    out("r9") _, out("r10") _, out("r11") _, out("rax") _, out("rcx") _,
                    out("rdx") _, out("rsi") _, out("rdi") _, out("r8") _,
                    options(nostack, readonly),
                )
            }
        };
    }

    /// An independent `sha256msg1` or `sha256msg2` (the register copy breaks the chain
    /// through the destination and is eliminated at rename).
    macro_rules! msg {
        () => {
            "vmovdqa xmm10, xmm11\nsha256msg1 xmm10, xmm11\nvmovdqa xmm10, xmm11\nsha256msg2 xmm10, xmm11\n"
        };
    }

    /// Ten scalar operations, each on its own accumulator (one dependent step per
    /// accumulator per `sha256rnds2`, well under its 2-cycle issue interval).
    macro_rules! scalar {
        () => {
            "add r9, r10\nxor r11, r10\nadd rax, r10\nxor rcx, r10\nadd rdx, r10\n\
             rorx rsi, r10, 6\nrorx rdi, r10, 11\nandn r8, r10, r9\nrorx r9, r10, 25\nlea r11, [r10 + rax]\n"
        };
    }

    /// One probe: its label, its number of chains and the code that runs it once.
    pub type Probe = (&'static str, u64, fn(&Wk));

    /// The probes.
    pub fn probes() -> Vec<Probe> {
        vec![
            ("1 chain", 1, |w| probe!(w, "", [(1, 2)])),
            ("2 chains", 2, |w| probe!(w, "", [(1, 2), (3, 4)])),
            ("3 chains", 3, |w| probe!(w, "", [(1, 2), (3, 4), (5, 6)])),
            ("4 chains", 4, |w| {
                probe!(w, "", [(1, 2), (3, 4), (5, 6), (7, 8)])
            }),
            ("4 chains + 2 msg1/msg2 per rnds2", 4, |w| {
                probe!(w, msg!(), [(1, 2), (3, 4), (5, 6), (7, 8)])
            }),
            ("3 chains + 2 msg1/msg2 per rnds2", 3, |w| {
                probe!(w, msg!(), [(1, 2), (3, 4), (5, 6)])
            }),
            ("4 chains + 10 scalar ops per rnds2", 4, |w| {
                probe!(w, scalar!(), [(1, 2), (3, 4), (5, 6), (7, 8)])
            }),
        ]
    }
}

fn main() -> ExitCode {
    #[cfg(target_arch = "x86_64")]
    {
        if !(std::arch::is_x86_feature_detected!("sha")
            && std::arch::is_x86_feature_detected!("avx")
            && std::arch::is_x86_feature_detected!("bmi2"))
        {
            eprintln!("this CPU lacks SHA-NI, AVX or BMI2");
            return ExitCode::from(2);
        }
        let wk = probe::Wk([0x5a; 16]);
        let calls: u64 = 200_000;
        for (label, chains, run) in probe::probes() {
            let mut per = Vec::new();
            for _ in 0..7 {
                let before = seconds_per_cycle(5_000_000);
                let start = thread_seconds();
                for _ in 0..calls {
                    run(std::hint::black_box(&wk));
                }
                let secs = thread_seconds() - start;
                let cycle = (before + seconds_per_cycle(5_000_000)) / 2.0;
                per.push(secs / cycle / (calls * probe::REPS * 2 * chains) as f64);
            }
            println!("{label:36} {:.2} cycles per sha256rnds2", median(&mut per));
        }
        ExitCode::SUCCESS
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        eprintln!("x86-64 only");
        ExitCode::from(2)
    }
}
