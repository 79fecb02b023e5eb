//! Deterministic entropy for `States.UUID` and `States.MathRandom`: the engine has no clock and
//! no random number generator, so the caller seeds a [`Dice`] (from the instance id, the state
//! visit and the field) and a replay draws the same values. Each draw is the SHA-256 of the
//! seed and a counter; not for secrets, as AWS says of `States.MathRandom` too.

use ring::digest;

/// Separates our digests from any other SHA-256 use of the same bytes.
const DOMAIN: &[u8] = b"flowbroker.asl.intrinsic.dice\0";

/// A deterministic stream of random-looking numbers: the same seed gives the same stream.
#[derive(Debug, Clone)]
pub struct Dice {
    seed: Vec<u8>,
    counter: u64,
}

impl Dice {
    /// A stream determined by `seed` alone.
    pub fn new(seed: &str) -> Dice {
        Dice {
            seed: seed.as_bytes().to_vec(),
            counter: 0,
        }
    }

    /// The next number of the stream.
    pub fn next_u64(&mut self) -> u64 {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(DOMAIN);
        ctx.update(&(self.seed.len() as u64).to_le_bytes());
        ctx.update(&self.seed);
        ctx.update(&self.counter.to_le_bytes());
        self.counter = self.counter.wrapping_add(1);
        let out = ctx.finish();
        let mut first = [0u8; 8];
        first.copy_from_slice(&out.as_ref()[..8]);
        u64::from_le_bytes(first)
    }

    /// A number in `[0, n)`, every value equally likely (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Draws at or above the largest multiple of n would favour small results: draw again.
        // The chance of even one retry is below n / 2^64; after 64 a plain modulo is used so
        // the loop always ends.
        let limit = u64::MAX - u64::MAX % n;
        for _ in 0..64 {
            let x = self.next_u64();
            if x < limit {
                return x % n;
            }
        }
        self.next_u64() % n
    }

    /// Sixteen bytes (for a UUID).
    pub fn bytes16(&mut self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        out[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Dice;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut d = Dice::new("instance-1/3/field");
                move |_| d.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut d = Dice::new("instance-1/3/field");
                move |_| d.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut d = Dice::new("instance-1/4/field");
                move |_| d.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // successive draws differ
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut d = Dice::new("below");
        let mut seen = [false; 6];
        for _ in 0..600 {
            let x = d.below(6);
            assert!(x < 6);
            seen[x as usize] = true;
        }
        assert!(
            seen.iter().all(|s| *s),
            "every value of [0, 6) drawn: {seen:?}"
        );
        assert_eq!(d.below(0), 0);
        assert_eq!(d.below(1), 0);
        // the full u64 range works without overflow
        let _ = d.below(u64::MAX);
    }

    #[test]
    fn sixteen_bytes_are_not_all_equal() {
        let b = Dice::new("uuid").bytes16();
        assert!(b.iter().any(|x| *x != b[0]));
        assert_eq!(b, Dice::new("uuid").bytes16());
    }
}
