//! AFL++ target: `flowbroker_fuzz::config` (see the crate docs).
fn main() {
    afl::fuzz!(|data: &[u8]| flowbroker_fuzz::config(data));
}
