//! `States.Base64Encode`, `States.Base64Decode` and `States.Hash`.

use super::{fails, run};
use serde_json::json;

#[test]
fn base64_round_trip() {
    // AWS: "Data to encode" -> "RGF0YSB0byBlbmNvZGU=" (the page's decode example prints
    // "Decoded data", a typo: AWS's recorded result is "Data to encode")
    let data = json!({"input": "Data to encode", "base64": "RGF0YSB0byBlbmNvZGU="});
    assert_eq!(
        run("States.Base64Encode($.input)", data.clone()),
        json!("RGF0YSB0byBlbmNvZGU=")
    );
    assert_eq!(
        run("States.Base64Decode($.base64)", data),
        json!("Data to encode")
    );
    assert_eq!(run("States.Base64Encode('')", json!({})), json!(""));
    assert_eq!(run("States.Base64Decode('')", json!({})), json!(""));
    // UTF-8 text; padding optional and line breaks skipped when decoding
    assert_eq!(run("States.Base64Encode('é')", json!({})), json!("w6k="));
    assert_eq!(run("States.Base64Decode('w6k')", json!({})), json!("é"));
    let data = json!({"b": "RGF0YSB0\r\nbyBlbmNvZGU="});
    assert_eq!(
        run("States.Base64Decode($.b)", data),
        json!("Data to encode")
    );
}

#[test]
fn base64_errors() {
    let cause = fails("States.Base64Decode($.b)", json!({"b": "!!!"}));
    assert!(cause.starts_with("States.Base64Decode: argument 1 (Base64 text) is not Base64"));
    let cause = fails("States.Base64Decode($.b)", json!({"b": "/w=="}));
    assert_eq!(
        cause,
        "States.Base64Decode: argument 1 (Base64 text) decodes to bytes that are not UTF-8 text"
    );
    let cause = fails("States.Base64Encode($.s)", json!({"s": "a".repeat(10_001)}));
    assert_eq!(
        cause,
        "States.Base64Encode: argument 1 (text) is 10001 characters long, more than the limit \
         of 10000"
    );
    assert!(run("States.Base64Encode($.s)", json!({"s": "a".repeat(10_000)})).is_string());
    let cause = fails("States.Base64Encode($.s)", json!({"s": [1]}));
    assert!(cause.contains("must be a string, but is an array of 1 item"));
}

#[test]
fn hash_algorithms() {
    // AWS's recorded results for "input data" (the documentation's SHA-1 example drops a
    // digit: "...d18d7485e..." for "...d18d74485e...")
    for (alg, hex) in [
        ("MD5", "812f45842bc6d66ee14572ce20db8e86"),
        ("SHA-1", "aaff4a450a104cd177d28d18d74485e8cae074b7"),
        ("SHA-256", "b4a697a057313163aee33cd8d40c66e9f0f177e00cac2de32475ffff6169c3e3"),
        (
            "SHA-384",
            "d28a7d5cf25a74f11a50a18452b75e04bb3d70c9dd0510d6123aa008c756511b87525bdc835ebb27e1fb9e9374a15562",
        ),
        (
            "SHA-512",
            "6ce4adb348546d4f449c4d25aad9a7c9cb711d9e91982d3f0b29ca2f3f47d4ce2deba23bf2954f0f1d593fc50283731a533d30d425402d4f91316d871303aac4",
        ),
    ] {
        let data = json!({"Data": "input data", "Algorithm": alg});
        assert_eq!(run("States.Hash($.Data, $.Algorithm)", data), json!(hex), "{alg}");
    }
}

#[test]
fn hash_errors() {
    let cause = fails("States.Hash('x', $.a)", json!({"a": "sha256"}));
    assert_eq!(
        cause,
        "States.Hash: argument 2 (algorithm) is \"sha256\", not one of MD5, SHA-1, SHA-256, \
         SHA-384, SHA-512 (did you mean \"SHA-256\"?)"
    );
    let cause = fails("States.Hash($.d, 'MD5')", json!({"d": {"a": 1}}));
    assert_eq!(
        cause,
        "States.Hash: argument 1 (data) must be a string, but is a JSON object"
    );
    let cause = fails("States.Hash($.d, 'MD5')", json!({"d": "é".repeat(10_001)}));
    assert!(cause.contains("is 10001 characters long"), "{cause}");
}
