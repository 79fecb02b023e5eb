//! AFL++ target: `flowbroker_fuzz::http` (see the crate docs).
fn main() {
    afl::fuzz!(|data: &[u8]| flowbroker_fuzz::http(data));
}
