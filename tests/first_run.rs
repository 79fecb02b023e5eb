//! The README's first run, as a new user does it: `scripts/run.sh` with no arguments starts a
//! local Kafka-protocol broker, the demo functions and the broker; `scripts/demo.sh` then starts
//! or triggers every sample that is not cron-scheduled and waits for each to complete. Uses the
//! README's fixed ports (9092, 9000, 9100, 8080), which must be free.

mod support;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use support::wait_for;

/// Stops `run.sh` and everything it started (its process group) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        // bash's kill with `--`: a negative number is the process group, never a signal
        // option (procps `kill -TERM -N` without `--` is not safe to rely on)
        let _ = Command::new("bash")
            .args(["-c", &format!("kill -TERM -- -{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// `scripts/X` with a user's environment: nothing of flowbroker's configured.
fn script(name: &str) -> Command {
    let mut c = Command::new(format!("scripts/{name}"));
    c.current_dir(support::root());
    for (k, _) in std::env::vars() {
        if k.starts_with("FLOWBROKER_") && k != "FLOWBROKER_TANSU" {
            c.env_remove(k);
        }
    }
    c.env("FLOWBROKER_BIN", env!("CARGO_BIN_EXE_flowbroker"));
    c
}

#[test]
fn the_demo_completes_every_sample_against_run_sh() {
    for port in [9092, 9000, 9100, 8080] {
        assert!(
            !listening(port),
            "port {port} is in use: the first-run test needs the README's ports free"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("run.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let run = script("run.sh")
        .env("FLOWBROKER_DATA_DIR", dir.path().join("data"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    let running = Running(run);
    let http = reqwest::blocking::Client::new();
    wait_for(180, "scripts/run.sh to be ready on :8080", || {
        let ok = http
            .get("http://127.0.0.1:8080/ready")
            .send()
            .is_ok_and(|r| r.status().is_success());
        ok.then_some(())
    });
    assert!(
        listening(9000),
        "run.sh started the demo functions:\n{}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );

    let out = script("demo.sh").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo.sh failed:\n{stdout}\n{stderr}\nrun.sh log:\n{}",
        std::fs::read_to_string(&log_path).unwrap_or_default()
    );
    assert!(listening(9100), "run.sh started the durable functions host");
    for sample in [
        "creditCheck",
        "orderFulfilment",
        "shipmentMatch",
        "approval",
    ] {
        assert!(
            stdout.contains(&format!("{sample}: COMPLETED")),
            "{sample}:\n{stdout}\n{stderr}"
        );
    }
    // the steps are CLI commands a user can copy
    assert!(
        stderr.contains("+ flowbroker send --type com.example.order.placed"),
        "{stderr}"
    );
    let functions =
        std::fs::read_to_string(support::root().join(".tansu/functions.log")).unwrap_or_default();
    assert!(
        functions.contains("/reserveStock") && functions.contains("/requestCreditCheck"),
        "the demo functions were called: {functions}"
    );

    drop(running);
    wait_for(30, "run.sh to stop what it started", || {
        (![9092, 9000, 9100, 8080].into_iter().any(listening)).then_some(())
    });
}
