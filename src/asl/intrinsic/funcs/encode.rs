//! Encoding and hashing: `States.Base64Encode`, `States.Base64Decode` and `States.Hash`.
//! AWS limits each input to 10,000 characters.

use super::super::sig::Func;
use super::args::{string, Args, Why};
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use md5::{Digest, Md5};
use ring::digest;
use serde_json::Value;
use std::fmt::Write;

/// The longest input (in characters) of the Base64 and hash functions.
pub(crate) const MAX_CHARS: usize = 10_000;

/// The algorithms `States.Hash` takes, as written in a call.
pub(crate) const ALGORITHMS: [&str; 5] = ["MD5", "SHA-1", "SHA-256", "SHA-384", "SHA-512"];

/// Decodes standard Base64 with or without its `=` padding.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A string argument of at most [`MAX_CHARS`] characters.
fn limited(v: &Value) -> Result<&str, String> {
    let s = string(v)?;
    let n = s.chars().count();
    if n > MAX_CHARS {
        return Err(format!(
            "is {n} characters long, more than the limit of {MAX_CHARS}"
        ));
    }
    Ok(s)
}

/// `States.Base64Encode(text)`: the text's UTF-8 bytes in standard (MIME alphabet) Base64.
pub(super) fn base64_encode(args: Args) -> Result<Value, Why> {
    let text = args.at(0, limited)?;
    Ok(Value::String(STANDARD.encode(text.as_bytes())))
}

/// The text a Base64 argument decodes to. Line breaks and spaces are skipped, as a MIME
/// decoder does; the bytes must be UTF-8 text, since the result is a JSON string.
fn decode(v: &Value) -> Result<String, String> {
    let text = limited(v)?;
    let packed: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let bytes = LENIENT
        .decode(packed.as_bytes())
        .map_err(|e| format!("is not Base64 ({e})"))?;
    String::from_utf8(bytes).map_err(|_| "decodes to bytes that are not UTF-8 text".to_string())
}

/// `States.Base64Decode(text)`: the text the Base64 encodes.
pub(super) fn base64_decode(args: Args) -> Result<Value, Why> {
    args.at(0, decode).map(Value::String)
}

/// A hash algorithm.
#[derive(Debug, Clone, Copy)]
enum Algorithm {
    Md5,
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

/// The algorithm argument of `States.Hash`, one of [`ALGORITHMS`] exactly.
fn algorithm(v: &Value) -> Result<Algorithm, String> {
    let name = string(v)?;
    Ok(match name {
        "MD5" => Algorithm::Md5,
        "SHA-1" => Algorithm::Sha1,
        "SHA-256" => Algorithm::Sha256,
        "SHA-384" => Algorithm::Sha384,
        "SHA-512" => Algorithm::Sha512,
        _ => {
            return Err(format!(
                "is {name:?}, not one of {}{}",
                ALGORITHMS.join(", "),
                crate::diag::did_you_mean(name, ALGORITHMS)
            ))
        }
    })
}

/// Lower-case hexadecimal.
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// `States.Hash(data, algorithm)`: the hash of the data's UTF-8 bytes, in lower-case hex.
pub(super) fn hash(args: Args) -> Result<Value, Why> {
    let data = args.at(0, limited)?.as_bytes();
    let sha = |alg: &'static digest::Algorithm| hex(digest::digest(alg, data).as_ref());
    let out = match args.at(1, algorithm)? {
        Algorithm::Md5 => hex(&Md5::digest(data)),
        Algorithm::Sha1 => sha(&digest::SHA1_FOR_LEGACY_USE_ONLY),
        Algorithm::Sha256 => sha(&digest::SHA256),
        Algorithm::Sha384 => sha(&digest::SHA384),
        Algorithm::Sha512 => sha(&digest::SHA512),
    };
    Ok(Value::String(out))
}

/// Deploy-time checks of one literal argument.
pub(super) fn check_arg(f: Func, index: usize, v: &Value) -> Result<(), String> {
    match (f, index) {
        (Func::Base64Encode, 0) | (Func::Hash, 0) => limited(v).map(drop),
        (Func::Base64Decode, 0) => decode(v).map(drop),
        (Func::Hash, 1) => algorithm(v).map(drop),
        _ => Ok(()),
    }
}
