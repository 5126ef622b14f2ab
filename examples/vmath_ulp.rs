//! Accuracy of the vmath kernels (src/backend/cpu/vmath/) in ulps: every float32 input
//! (all 2^32 bit patterns) or a sample of them, against a float64 reference, and the
//! levels (baseline, AVX2, AVX-512) compared bit for bit on the same inputs. Run in
//! release mode; the results of the last full run are in docs/kernels.md.
//!
//! ```text
//! cargo run --release --example vmath_ulp                  # all float32 functions, every input
//! cargo run --release --example vmath_ulp -- exp log       # some
//! cargo run --release --example vmath_ulp -- --stride 97   # every 97th bit pattern
//! cargo run --release --example vmath_ulp -- --f64 --samples 100000000
//! ```
//!
//! float32 reference: float64 libm (its error, about 2^-52 relative, is 2^-29 of a
//! float32 ulp). float64 (`--f64`): a double-double evaluation (`reference.rs`, shared
//! with the module's tests), over random bit patterns and dense ranges.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rayon::prelude::*;
use rgrad::backend::cpu::vmath::{self, Func, Level};
use std::mem::MaybeUninit;

#[path = "../src/backend/cpu/vmath/reference.rs"]
#[allow(dead_code)]
mod reference;

/// What one chunk of inputs found.
#[derive(Clone, Copy, Default)]
struct Found {
    worst: f64,
    at: u64,
    over_half: u64,
    over_one: u64,
    level_mismatch: u64,
    one_mismatch: u64,
    count: u64,
}

impl Found {
    fn merge(mut self, o: Found) -> Found {
        if o.worst > self.worst {
            self.worst = o.worst;
            self.at = o.at;
        }
        self.over_half += o.over_half;
        self.over_one += o.over_one;
        self.level_mismatch += o.level_mismatch;
        self.one_mismatch += o.one_mismatch;
        self.count += o.count;
        self
    }
}

fn run<T: Copy + Default>(f: vmath::AtFn<T>, level: Level, xs: &[T]) -> Vec<T> {
    let mut out = vec![MaybeUninit::<T>::uninit(); xs.len()];
    f(level, xs, &mut out);
    // SAFETY: slice functions initialise every element
    out.into_iter()
        .map(|v| unsafe { v.assume_init() })
        .collect()
}

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn check_f32(f: &Func<f32>, exact: fn(f64) -> f64, stride: u64, levels: &[Level]) -> Found {
    let total = (1u64 << 32).div_ceil(stride);
    let chunk = 1u64 << 16;
    (0..total.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let xs: Vec<f32> = (c * chunk..((c + 1) * chunk).min(total))
                .map(|i| f32::from_bits((i * stride) as u32))
                .collect();
            let top = *levels.last().unwrap();
            let out = run(f.at, top, &xs);
            let mut found = Found {
                count: xs.len() as u64,
                ..Found::default()
            };
            for &l in &levels[..levels.len() - 1] {
                let o = run(f.at, l, &xs);
                found.level_mismatch += out
                    .iter()
                    .zip(&o)
                    .filter(|(a, b)| !same32(**a, **b))
                    .count() as u64;
            }
            for (i, (&x, &y)) in xs.iter().zip(&out).enumerate() {
                if i % 61 == 0 && !same32((f.one)(x), y) {
                    found.one_mismatch += 1;
                }
                let u = reference::ulps_f32(y, exact(f64::from(x)));
                if u > 0.5 {
                    found.over_half += 1;
                }
                if u > 1.0 {
                    found.over_one += 1;
                }
                if u > found.worst {
                    found.worst = u;
                    found.at = u64::from(x.to_bits());
                }
            }
            found
        })
        .reduce(Found::default, Found::merge)
}

fn check_f64(f: &Func<f64>, exact: &reference::Exact64, samples: u64, levels: &[Level]) -> Found {
    let chunk = 1u64 << 14;
    (0..samples.div_ceil(chunk))
        .into_par_iter()
        .map(|c| {
            let xs = reference::sample_f64(f.name, c, chunk as usize);
            let top = *levels.last().unwrap();
            let out = run(f.at, top, &xs);
            let mut found = Found {
                count: xs.len() as u64,
                ..Found::default()
            };
            for &l in &levels[..levels.len() - 1] {
                let o = run(f.at, l, &xs);
                found.level_mismatch += out
                    .iter()
                    .zip(&o)
                    .filter(|(a, b)| a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()))
                    .count() as u64;
            }
            for (&x, &y) in xs.iter().zip(&out) {
                let u = reference::ulps_f64(y, exact(x));
                if u > 0.5 {
                    found.over_half += 1;
                }
                if u > 1.0 {
                    found.over_one += 1;
                }
                if u > found.worst {
                    found.worst = u;
                    found.at = x.to_bits();
                }
            }
            found
        })
        .reduce(Found::default, Found::merge)
}

/// `powf::at` with the exponent fixed (the tool checks one exponent at a time).
fn pow_at(y: f32) -> vmath::AtFn<f32> {
    macro_rules! fixed {
        ($($v:literal),*) => {
            $(if y == $v {
                return |l, s, d| vmath::float32::powf::at(l, s, $v, d);
            })*
        };
    }
    fixed!(2.5, -1.5, 0.7, 10.0, -7.3, 3.0, 1e-3, 40.5);
    |l, s, d| vmath::float32::powf::at(l, s, 1.0 / 3.0, d)
}

fn pow_ref(y: f32) -> fn(f64) -> f64 {
    macro_rules! fixed {
        ($($v:literal),*) => {
            $(if y == $v {
                return |x| x.powf(f64::from($v as f32));
            })*
        };
    }
    fixed!(2.5, -1.5, 0.7, 10.0, -7.3, 3.0, 1e-3, 40.5);
    |x| x.powf(f64::from(1.0f32 / 3.0))
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut take = |flag: &str| -> Option<String> {
        let i = args.iter().position(|a| a == flag)?;
        args.remove(i);
        Some(args.remove(i))
    };
    let stride: u64 = take("--stride").map_or(1, |s| s.parse().unwrap());
    let samples: u64 = take("--samples").map_or(10_000_000, |s| s.parse().unwrap());
    let f64_mode = args
        .iter()
        .position(|a| a == "--f64")
        .map(|i| args.remove(i))
        .is_some();
    let pow_mode = args
        .iter()
        .position(|a| a == "--pow")
        .map(|i| args.remove(i))
        .is_some();
    let levels = vmath::supported();
    println!(
        "levels compared: {:?}; CPU threads: {}",
        levels.iter().map(|l| l.name()).collect::<Vec<_>>(),
        rayon::current_num_threads()
    );
    println!(
        "{:<9} {:>14} {:>10} {:>14} {:>12} {:>9} {:>9}",
        "function", "inputs", "max ulp", "at", "> 0.5 ulp", "> 1 ulp", "mismatch"
    );
    let t0 = std::time::Instant::now();
    if pow_mode {
        // float32 x^y: every x for a few exponents y
        for y in [2.5f32, -1.5, 1.0 / 3.0, 0.7, 10.0, -7.3, 3.0, 1e-3, 40.5] {
            let f = Func::<f32> {
                name: "pow",
                at: pow_at(y),
                one: |x| x,
            };
            let exact: fn(f64) -> f64 = pow_ref(y);
            let found = check_f32(&f, exact, stride, &levels);
            println!(
                "{:<9} {:>14} {:>10.4} {:>14e} {:>12} {:>9} {:>9}",
                format!("pow {y}"),
                found.count,
                found.worst,
                f32::from_bits(found.at as u32),
                found.over_half,
                found.over_one,
                found.level_mismatch
            );
        }
    } else if f64_mode {
        for f in vmath::float64::FUNCS
            .iter()
            .filter(|f| args.is_empty() || args.contains(&f.name.to_string()))
        {
            let t = std::time::Instant::now();
            let found = check_f64(f, &reference::exact_f64(f.name), samples, &levels);
            println!(
                "{:<9} {:>14} {:>10.4} {:>14e} {:>12} {:>9} {:>9} ({:.1} s)",
                f.name,
                found.count,
                found.worst,
                f64::from_bits(found.at),
                found.over_half,
                found.over_one,
                found.level_mismatch + found.one_mismatch,
                t.elapsed().as_secs_f64()
            );
        }
    } else {
        for f in vmath::float32::FUNCS
            .iter()
            .filter(|f| args.is_empty() || args.contains(&f.name.to_string()))
        {
            let found = check_f32(f, reference::exact_f32(f.name), stride, &levels);
            println!(
                "{:<9} {:>14} {:>10.4} {:>14e} {:>12} {:>9} {:>9}",
                f.name,
                found.count,
                found.worst,
                f32::from_bits(found.at as u32),
                found.over_half,
                found.over_one,
                found.level_mismatch + found.one_mismatch
            );
        }
    }
    println!("({:.1} s)", t0.elapsed().as_secs_f64());
}
