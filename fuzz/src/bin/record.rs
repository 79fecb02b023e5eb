//! AFL++ target: `flowbroker_fuzz::record` (see the crate docs).
fn main() {
    afl::fuzz!(|data: &[u8]| flowbroker_fuzz::record(data));
}
