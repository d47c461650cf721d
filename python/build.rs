//! Where the extension finds the prebuilt HiGHS at run time (docs/INSTALL.md,
//! "Python"): first the `highsbox` wheel installed next to the package
//! (`site-packages/highsbox/highs_dist/lib`, a dependency in pyproject.toml),
//! then this clone's `.deps/highs/lib` (scripts/setup.sh). Harmless when HiGHS
//! was compiled from source and linked statically. Nothing to export.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo");
        let clone = Path::new(&manifest)
            .join("..")
            .join(".deps")
            .join("highs")
            .join("lib");
        println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/../highsbox/highs_dist/lib");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", clone.display());
    }
}
