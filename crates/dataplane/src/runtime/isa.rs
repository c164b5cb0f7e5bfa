//! The instruction-set variant the nodes with SIMD code paths run: chosen once per dataplane,
//! the best the CPU has unless the environment variable [`ENV`] names one.
//!
//! One binary runs on every x86-64 machine: the AVX2 and AVX-512 paths are compiled with
//! `#[target_feature]` and only ever called after [`Isa::supported`] said yes, so asking for a
//! variant the CPU lacks is refused with a message, never a SIGILL. Every variant gives the
//! same verdicts as the scalar code (tests run each one the CPU has against it).

use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that forces a variant: `scalar`, `avx2` or `avx512`.
pub const ENV: &str = "VECFLOW_ISA";

/// An instruction-set variant of the SIMD nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// Portable Rust, no SIMD intrinsics.
    Scalar,
    /// 8 packets at once in 256-bit registers (AVX2).
    Avx2,
    /// 16 packets at once in 512-bit registers (AVX-512 F, BW and VL).
    Avx512,
}

impl Isa {
    /// Every variant, slowest first.
    pub const ALL: [Isa; 3] = [Isa::Scalar, Isa::Avx2, Isa::Avx512];

    /// Its name, as [`ENV`] and `show runtime` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// True when this CPU can run it.
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The variants this CPU can run, slowest first.
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.supported()).collect()
    }

    /// The fastest variant this CPU can run.
    pub fn best() -> Isa {
        *Isa::available().last().expect("scalar always runs")
    }

    /// The variant named `name`, if this CPU runs it; otherwise an error naming what it has.
    pub fn parse(name: &str) -> Result<Isa, String> {
        let has = || Isa::available().iter().map(|i| i.name()).collect::<Vec<_>>().join(", ");
        let Some(isa) = Isa::ALL.into_iter().find(|i| i.name() == name) else {
            return Err(format!("{ENV}={name}: not a variant (scalar, avx2 or avx512; this CPU runs {})", has()));
        };
        if !isa.supported() {
            return Err(format!("{ENV}={name}: this CPU lacks {name} (it runs {})", has()));
        }
        Ok(isa)
    }

    /// The variant [`ENV`] asks for, or the best one when it is unset or empty.
    pub fn from_env() -> Result<Isa, String> {
        match std::env::var(ENV) {
            Ok(name) if !name.is_empty() => Isa::parse(&name),
            _ => Ok(Isa::best()),
        }
    }
}

/// The variant graphs made from now on run, as `Isa as u8`; `u8::MAX` until first chosen.
static CHOSEN: AtomicU8 = AtomicU8::new(u8::MAX);

/// The variant new graphs run: the one last [`choose`]n, else the one [`ENV`] asks for (the
/// best when that is not one this CPU runs: starting the dataplane refuses such a value
/// before any graph is made).
pub fn chosen() -> Isa {
    match CHOSEN.load(Ordering::Relaxed) {
        u8::MAX => Isa::from_env().unwrap_or_else(|_| Isa::best()),
        k => Isa::ALL[usize::from(k)],
    }
}

/// Makes graphs made from now on run `isa` (one this CPU runs: see [`Isa::parse`]).
pub fn choose(isa: Isa) {
    assert!(isa.supported(), "{} is not supported here", isa.name());
    CHOSEN.store(isa as u8, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_or_missing_ones_are_refused() {
        for isa in Isa::available() {
            assert_eq!(Isa::parse(isa.name()), Ok(isa));
        }
        let e = Isa::parse("sse9").unwrap_err();
        assert!(e.contains("VECFLOW_ISA=sse9: not a variant") && e.contains("scalar"), "{e}");
        for isa in Isa::ALL.into_iter().filter(|i| !i.supported()) {
            let e = Isa::parse(isa.name()).unwrap_err();
            assert!(e.contains("this CPU lacks"), "{e}");
        }
        assert_eq!(Isa::available()[0], Isa::Scalar);
    }
}
