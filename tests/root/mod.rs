//! The checkout a test reads its files from. Cargo sets `CARGO_MANIFEST_DIR` when it runs a
//! test, so a test binary built from another clone of the same sources (`scripts/test.sh`
//! shares one build directory, and cargo reuses a binary whose sources are no newer) reads
//! this clone's files, not that one's; the directory compiled in is the fallback for a
//! binary run by hand.

use std::path::PathBuf;

/// The package's directory: where `Cargo.toml`, `src/` and `tests/` are.
pub fn root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}
