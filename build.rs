//! Links the `pi-engine` binary with its start-up code laid out together.
//!
//! A process's resident memory counts every page of code it touched, and the kernel maps
//! code in 64 KiB runs around each page it faults in: the functions a run of `pi-engine`
//! calls, scattered over 15 MB of machine code, kept about 7 MB of it resident. The linker
//! places the functions listed in `src/bin/pi-engine.order` (those one `--mode json` run
//! executes, recorded by `scripts/gen-symbol-order.sh`) first and together, which took the
//! command's peak RSS from 12.4 to 8.3 MiB. A name the build no longer has is skipped; a stale
//! list costs memory, not correctness.
//!
//! Only where the linker is known to take the flag: rustc's default for
//! x86_64-unknown-linux-gnu (LLD, since Rust 1.90), with no linker chosen in `RUSTFLAGS`.
//! `PI_ENGINE_SYMBOL_ORDER=0` turns it off.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/bin/pi-engine.order");
    println!("cargo:rerun-if-env-changed=PI_ENGINE_SYMBOL_ORDER");
    if env::var("PI_ENGINE_SYMBOL_ORDER").is_ok_and(|v| v == "0") {
        return;
    }
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return;
    }
    // A linker of the user's own (`-C linker=…`, `-fuse-ld=…`, `-Z linker-features`) may not
    // know `--symbol-ordering-file`.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("link")
        || env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return;
    }
    let manifest = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let order = Path::new(&manifest).join("src/bin/pi-engine.order");
    if !order.exists() {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bin=pi-engine=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bin=pi-engine=-Wl,--no-warn-symbol-ordering");
}
