//! AFL++ target: `flowbroker_fuzz::workflow` (see the crate docs).
fn main() {
    afl::fuzz!(|data: &[u8]| flowbroker_fuzz::workflow(data));
}
