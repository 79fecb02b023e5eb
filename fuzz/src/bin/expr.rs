//! AFL++ target: `flowbroker_fuzz::expr` (see the crate docs).
fn main() {
    afl::fuzz!(|data: &[u8]| flowbroker_fuzz::expr(data));
}
