//! Writes the seed corpora, one directory per target under the given directory, from the
//! project's fixtures (workflow files, the sample config) and a few hand-made inputs, so no
//! binary seed is kept in git: `seeds OUT_DIR [REPO]` (REPO: the clone to read, by default
//! the one this binary was built in).

use flowbroker_fuzz::encode;
use std::path::{Path, PathBuf};

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    let Ok(d) = std::fs::read_dir(p) else { return };
    let mut entries: Vec<PathBuf> = d.flatten().map(|e| e.path()).collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, out);
        } else {
            out.push(e);
        }
    }
}

fn main() {
    let out = PathBuf::from(std::env::args().nth(1).expect("usage: seeds OUT_DIR [REPO]"));
    // the clone to read (scripts/fuzz.sh names its own): the build directory is shared, so
    // this binary may have been built in another clone of the same sources
    let root = std::env::args()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let write = |target: &str, name: &str, data: &[u8]| {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), data).unwrap();
    };

    // workflow files: every sample and fixture, each under 64 KiB (AFL's seed size limit)
    let mut wf = Vec::new();
    walk(&root.join("workflows"), &mut wf);
    walk(&root.join("tests/fixtures"), &mut wf);
    for (i, f) in wf.iter().enumerate() {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or_default();
        let asl = f.to_string_lossy().contains(".asl.");
        let pick = match ext {
            "json" => 0u8,
            "yaml" | "yml" => 1,
            _ => continue,
        } | if asl { 2 } else { 0 };
        let text = std::fs::read(f).unwrap();
        if text.len() < 60_000 {
            let mut data = vec![pick];
            data.extend(text);
            write("workflow", &format!("{i:03}.{ext}"), &data);
        }
    }

    // expressions, each with data after a NUL
    let exprs = [
        "{{ $.a[0] }}",
        "{{ $.a[?(@.b == 'x')] }}",
        "{{ $.n > 1 }}",
        "Hello {{ $.s }} and {{ $.a[1].b }}",
        "{{ $.a.length() }}",
        "{{ $..b }}",
        "$.a[*]",
        "$.a[-1]",
        "$v.a[(@.length-1)]",
        "$['it\\'s']",
        "States.Format('{} and {}', $.s, States.ArrayLength($.a))",
        "States.ArrayPartition(States.ArrayRange(1, 9, 2), 2)",
        "States.Hash($.s, 'SHA-256')",
        "$sum($states.input.a[b = 'x'].n) > 1 ? 'big' : 'small'",
    ];
    for (i, e) in exprs.iter().enumerate() {
        let mut data = e.as_bytes().to_vec();
        data.push(0);
        data.extend_from_slice(br#"{"a": [1, {"b": "x"}], "n": 2, "s": "t"}"#);
        write("expr", &format!("{i:03}"), &data);
    }

    // events: binary mode headers, structured mode, and a header without a value
    let binary_kafka: [(&str, Option<&[u8]>); 5] = [
        ("ce_specversion", Some(b"1.0")),
        ("ce_id", Some(b"e1")),
        ("ce_source", Some(b"/orders")),
        ("ce_type", Some(b"order.created")),
        ("content-type", Some(b"application/json")),
    ];
    let structured =
        br#"{"specversion":"1.0","id":"e2","source":"/orders","type":"order.created","orderid":"O1","data":{"x":1}}"#;
    write("record", "binary", &encode(&binary_kafka, br#"{"orderid": "O1"}"#));
    write("record", "structured", &encode(&[], structured));
    write(
        "record",
        "null-header",
        &encode(&[("ce_specversion", None)], b"{}"),
    );
    let binary_http: [(&str, Option<&[u8]>); 5] = [
        ("ce-specversion", Some(b"1.0")),
        ("ce-id", Some(b"e1")),
        ("ce-source", Some(b"/orders")),
        ("ce-type", Some(b"order.created")),
        ("content-type", Some(b"application/json")),
    ];
    write("http", "binary", &encode(&binary_http, br#"{"orderid": "O1"}"#));
    write(
        "http",
        "structured",
        &encode(
            &[("content-type", Some(b"application/cloudevents+json"))],
            structured,
        ),
    );

    // config files
    write(
        "config",
        "deploy",
        &std::fs::read(root.join("deploy/flowbroker.toml")).unwrap(),
    );
    write(
        "config",
        "full",
        b"workflows_dir = \"w\"\nretention = \"P7D\"\ntimezone = \"Europe/Paris\"\n[kafka]\nbrokers = \"k:9092\"\ninput_topics = [\"a\", \"b\"]\n[kafka.topics]\n\"order.created\" = \"orders\"\n[http]\nlisten = \"0.0.0.0:8080\"\nauth_token = \"t\"\n[cluster]\npartitions = 6\n",
    );
    println!("seeds written to {}", out.display());
}
