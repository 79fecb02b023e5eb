//! Durable functions in tests: the Python host (`scripts/durable-host.py`, under the SDK's
//! virtualenv from `scripts/durable-sdk.sh` or `FLOWBROKER_DURABLE_PYTHON`) serving the
//! handlers in `tests/fixtures/durable`, the side effects they record, and boto3 as an AWS
//! client (`tests/fixtures/durable/aws.py`). A test that cannot get the SDK panics.

use super::{free_port, installed, root, wait_for};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The Python that has the SDK.
pub fn python() -> PathBuf {
    PathBuf::from(installed(
        "FLOWBROKER_DURABLE_PYTHON",
        "durable-sdk.sh",
        "the durable execution SDK for Python; these tests need it",
    ))
}

/// The `NODE_PATH` that has the JavaScript SDK.
pub fn node_path() -> String {
    installed(
        "FLOWBROKER_DURABLE_NODE_PATH",
        "durable-sdk-node.sh",
        "the durable execution SDK for JavaScript; this test needs it",
    )
}

/// The handlers of `tests/fixtures/durable`, served on a free port.
pub struct Host {
    child: Child,
    pub url: String,
    /// Where the handlers' side effects are recorded (one JSON line each).
    pub effects: PathBuf,
    _dir: tempfile::TempDir,
}

impl Host {
    /// Serves `handlers` (file stems in tests/fixtures/durable) for the broker whose HTTP
    /// listener is `broker` (`127.0.0.1:port`).
    pub fn start(broker: &str, handlers: &[&str]) -> Host {
        Host::start_with(broker, handlers, &[])
    }

    /// [`Host::start`] with environment variables (an AWS key pair, say).
    pub fn start_with(broker: &str, handlers: &[&str], env: &[(&str, &str)]) -> Host {
        let fixtures = root().join("tests/fixtures/durable");
        let mut cmd = Command::new(python());
        cmd.arg(root().join("scripts/durable-host.py"))
            .args(handlers.iter().map(|h| fixtures.join(format!("{h}.py"))))
            .envs(env.iter().copied());
        Host::spawn(cmd, broker)
    }

    /// Serves the JavaScript `handlers` (file stems in tests/fixtures/durable/node) with
    /// scripts/durable-host-node.js.
    pub fn start_node(broker: &str, handlers: &[&str]) -> Host {
        let fixtures = root().join("tests/fixtures/durable/node");
        let mut cmd = Command::new("node");
        cmd.arg(root().join("scripts/durable-host-node.js"))
            .args(handlers.iter().map(|h| fixtures.join(format!("{h}.js"))))
            .env("NODE_PATH", node_path());
        Host::spawn(cmd, broker)
    }

    fn spawn(mut cmd: Command, broker: &str) -> Host {
        let dir = tempfile::tempdir().unwrap();
        let effects = dir.path().join("effects.jsonl");
        let port = free_port();
        let child = cmd
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--broker", &format!("http://{broker}")])
            .env("DURABLE_EFFECTS", &effects)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("host.log")).unwrap())
            .spawn()
            .expect("start the durable host");
        wait_for(30, "the durable host to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        Host {
            child,
            url: format!("http://127.0.0.1:{port}"),
            effects,
            _dir: dir,
        }
    }

    /// A deployment file for handler `name` served here.
    pub fn definition(&self, name: &str) -> (String, String) {
        (
            format!("{name}.durable.yaml"),
            format!("invoke: {}\n", self.url),
        )
    }

    /// The side effects recorded so far.
    pub fn effects(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.effects)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("host.log")).unwrap_or_default()
    }

    /// Waits for a `send` effect recorded for a callback and returns its callback id.
    pub fn callback_ids(&self, n: usize, secs: u64) -> Vec<String> {
        wait_for(secs, &format!("{n} callback ids to be sent"), || {
            let ids: Vec<String> = self
                .effects()
                .iter()
                .filter(|e| e["what"] == "send")
                .map(|e| e["callback_id"].as_str().unwrap().to_string())
                .collect();
            (ids.len() >= n).then_some(ids)
        })
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// boto3's `lambda` client against the broker: `tests/fixtures/durable/aws.py ARGS`.
pub fn aws(broker: &str, args: &[&str]) -> Value {
    aws_with(broker, args, &[])
}

/// [`aws`] with environment variables (credentials).
pub fn aws_with(broker: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let out = Command::new(python())
        .arg(root().join("tests/fixtures/durable/aws.py"))
        .arg(format!("http://{broker}"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run aws.py");
    assert!(
        out.status.success(),
        "aws.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "aws.py {args:?} printed {:?}: {e}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// What the SDK's own reference backend (the testing package's in-process runner) gives for
/// `handler` with `input`: `{"status", "result", "error": {"type", "message"}}`. `children`
/// are `name=handler` pairs for chained invokes.
pub fn reference(handler: &str, input: &Value, children: &[&str]) -> Value {
    let out = Command::new(python())
        .arg(root().join("tests/fixtures/durable/reference.py"))
        .arg(handler)
        .arg(input.to_string())
        .args(children)
        .output()
        .expect("run reference.py");
    assert!(
        out.status.success(),
        "reference.py {handler}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("reference.py {handler} printed {text:?}: {e}"))
}
