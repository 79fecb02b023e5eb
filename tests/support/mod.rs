//! Harness for end-to-end tests: a real Kafka-protocol broker process (tansu, fetched by
//! `scripts/tansu.sh`), the real `flowbroker` binary, a real HTTP function server, and Kafka
//! clients that publish events and collect what the broker produces. Nothing is mocked; a
//! test that cannot get its broker panics with the reason.
#![allow(dead_code)]

pub mod durable;
#[path = "../root/mod.rs"]
mod root;
pub use root::root;
pub mod manual;
pub mod otlp;

use flowbroker::engine::Event;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const TOPICS: [&str; 4] = [
    "flowbroker.in",
    "flowbroker.out",
    "flowbroker.lifecycle",
    "flowbroker.dlq",
];

/// A consumer assigned to every partition of `topics` from the beginning (no group
/// membership, nothing committed).
pub fn reader(brokers: &str, topics: &[&str], fetch_wait_ms: u32) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "test-reader")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", fetch_wait_ms.to_string())
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for t in topics {
        for p in 0..3 {
            tpl.add_partition_offset(t, p, Offset::Beginning).unwrap();
        }
    }
    c.assign(&tpl).unwrap();
    c
}

/// The benches' workflow: starts on a `bench.ping` event, injects, ends producing `bench.pong`.
pub const ECHO: &str = include_str!("../fixtures/echo.yaml");

/// The variable setting `cluster.processor_threads`: the tests' brokers run a pool of 2.
pub const PROCESSOR_THREADS: &str = "FLOWBROKER_CLUSTER_PROCESSOR_THREADS";

/// The broker's default processor threads, which the benches measure instead of the tests'
/// pool.
pub const DEFAULT_THREADS: (&str, &str) = (PROCESSOR_THREADS, "0");

/// A port nothing listens on, for a process a test starts. It is taken below the kernel's
/// ephemeral range (`ip_local_port_range`): a port the kernel handed out for `:0` can also be
/// given to any outgoing connection's local end before the process binds it (seen: a broker
/// refused "Address already in use"). Each port is handed out once per test process,
/// starting from a point that differs between processes.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    const LOW: u32 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    let span = ephemeral.saturating_sub(LOW);
    if span < 1_000 {
        // an unusual range: let the kernel choose
        return TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
    }
    let seed = std::process::id().wrapping_mul(7919)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
    let _ = NEXT.compare_exchange(u32::MAX, seed % span, Ordering::Relaxed, Ordering::Relaxed);
    for _ in 0..span {
        let port = LOW + NEXT.fetch_add(1, Ordering::Relaxed) % span;
        if TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
    }
    panic!("no free port between {LOW} and {ephemeral}");
}

/// Waits for `f` to return `Some`, polling every 50 ms, or panics with `what` after `secs`.
pub fn wait_for<T>(secs: u64, what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_or_explain(secs, what, f, String::new)
}

/// [`wait_for`], with `explain()` (what was there instead) in the panic message. The message
/// is printed again after a [`Broker`]'s log, so a CI log's tail shows it.
pub fn wait_or_explain<T>(
    secs: u64,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
    mut explain: impl FnMut() -> String,
) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > end {
            let why = explain();
            let msg = format!("timed out after {secs}s waiting for {what}{}", {
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            });
            TIMED_OUT.with(|t| *t.borrow_mut() = Some(msg.clone()));
            panic!("{msg}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

thread_local! {
    /// The wait that timed out on this test's thread, for [`Broker`]'s drop to repeat.
    static TIMED_OUT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

fn tansu_binary() -> PathBuf {
    PathBuf::from(installed(
        "FLOWBROKER_TANSU",
        "tansu.sh",
        "a Kafka-protocol broker; integration tests need one",
    ))
}

/// What `scripts/{script}` prints (the path of something it installs first if needed), or
/// the environment variable `var` when set; panics with `what` when the script fails.
pub fn installed(var: &str, script: &str, what: &str) -> String {
    if let Ok(p) = std::env::var(var) {
        return p;
    }
    let script = root().join("scripts").join(script);
    let out = Command::new(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} could not provide {what}",
        script.display()
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The tansu build with the sqlite and slatedb storage engines (`scripts/tansu-engines.sh`, or
/// `FLOWBROKER_TANSU_ENGINES`).
fn tansu_engines_binary() -> PathBuf {
    PathBuf::from(installed(
        "FLOWBROKER_TANSU_ENGINES",
        "tansu-engines.sh",
        "tansu with the sqlite and slatedb engines; the Kafka restart and trim tests need it",
    ))
}

/// What serves Kafka for a test.
enum Proc {
    Tansu(Child),
    /// tansu on sqlite in this directory: [`Kafka::stop`] and [`Kafka::start_again`] keep its
    /// data.
    Persistent(Option<Child>, PathBuf, tempfile::TempDir),
    #[cfg(feature = "docker-tests")]
    Docker(
        Box<
            testcontainers_modules::testcontainers::Container<
                testcontainers_modules::kafka::apache::Kafka,
            >,
        >,
    ),
}

/// A Kafka-protocol broker on a free loopback port, stopped on drop: a tansu process by
/// default; tansu on its slatedb engine, which implements DeleteRecords, with
/// `FLOWBROKER_TEST_KAFKA=slatedb`; Apache Kafka in a container with
/// `FLOWBROKER_TEST_KAFKA=docker` and `--features docker-tests` (needs a Docker engine).
pub struct Kafka {
    proc: Proc,
    pub port: u16,
}

impl Kafka {
    /// CPU time the tansu process has used so far (all threads), in seconds; `None` for a
    /// Kafka in a container.
    pub fn cpu_secs(&self) -> Option<f64> {
        cpu_secs_of(self.tansu_pid()?)
    }

    /// The tansu process's id, while it runs; `None` for a Kafka in a container.
    fn tansu_pid(&self) -> Option<u32> {
        match &self.proc {
            Proc::Tansu(child) | Proc::Persistent(Some(child), ..) => Some(child.id()),
            _ => None,
        }
    }

    /// The tansu process's resident set and its memory swapped out, in KiB (Linux `/proc`);
    /// `None` for a Kafka in a container. The test tansu keeps every record in memory, so a
    /// long run can make it swap, and the broker's rate then says more about the machine
    /// than about the broker.
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        let pid = self.tansu_pid()?;
        Some((
            status_kib_of(pid, "VmRSS:")?,
            status_kib_of(pid, "VmSwap:").unwrap_or(0),
        ))
    }

    pub fn start() -> Kafka {
        match std::env::var("FLOWBROKER_TEST_KAFKA").as_deref() {
            Ok("docker") => return Kafka::docker(),
            Ok("slatedb") => return Kafka::start_trimming(),
            _ => {}
        }
        Kafka::tansu(&tansu_binary(), &[])
    }

    /// A tansu whose storage engine (slatedb, in memory) implements DeleteRecords, so a
    /// changelog can be trimmed; the default engine refuses it (docs/kafka.md).
    pub fn start_trimming() -> Kafka {
        Kafka::tansu(
            &tansu_engines_binary(),
            &["--storage-engine", "slatedb://memory"],
        )
    }

    /// tansu `bin` with `args` on a free port, with the tests' topics.
    fn tansu(bin: &Path, args: &[&str]) -> Kafka {
        let port = free_port();
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(bin)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        wait_for(20, "tansu to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        let k = Kafka {
            proc: Proc::Tansu(child),
            port,
        };
        for t in TOPICS {
            k.create_topic(t, 3);
        }
        k
    }

    /// The low and high watermarks of one partition: the first offset still held and the
    /// next offset to be written.
    pub fn watermarks(&self, topic: &str, partition: i32) -> (i64, i64) {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.brokers())
            .create()
            .unwrap();
        c.fetch_watermarks(topic, partition, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("watermarks of {topic}/{partition}: {e}"))
    }

    /// The offsets `group` has committed for partitions 0..`partitions` of `topic` (-1 where
    /// none), read with an OffsetFetch (no membership).
    pub fn committed(&self, group: &str, topic: &str, partitions: i32) -> Vec<i64> {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.brokers())
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition(topic, p);
        }
        let got = c
            .committed_offsets(tpl, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("committed offsets of {group} on {topic}: {e}"));
        (0..partitions)
            .map(|p| match got.find_partition(topic, p).map(|e| e.offset()) {
                Some(Offset::Offset(o)) => o,
                _ => -1,
            })
            .collect()
    }

    /// [`Kafka::watermarks`] of every partition of `topic` (none when it does not exist yet).
    pub fn all_watermarks(&self, topic: &str) -> Vec<(i64, i64)> {
        use rdkafka::consumer::{BaseConsumer, Consumer};
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", self.brokers())
            .create()
            .unwrap();
        let Ok(md) = c.fetch_metadata(Some(topic), Duration::from_secs(10)) else {
            return vec![];
        };
        let n = md.topics().first().map_or(0, |t| t.partitions().len()) as i32;
        (0..n)
            .filter_map(|p| c.fetch_watermarks(topic, p, Duration::from_secs(10)).ok())
            .collect()
    }

    /// A tansu that keeps its topics, records and group offsets in sqlite, so it can be
    /// stopped ([`Kafka::stop`], SIGKILL) and started again on the same port mid-test.
    pub fn start_persistent() -> Kafka {
        let bin = tansu_engines_binary();
        let dir = tempfile::tempdir().unwrap();
        let mut k = Kafka {
            proc: Proc::Persistent(None, bin, dir),
            port: free_port(),
        };
        k.start_again();
        for t in TOPICS {
            k.create_topic(t, 3);
        }
        k
    }

    /// SIGKILLs a persistent tansu ([`Kafka::start_persistent`]).
    pub fn stop(&mut self) {
        match &mut self.proc {
            Proc::Persistent(child, ..) => {
                if let Some(mut c) = child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
            _ => panic!("only a persistent tansu can be stopped and started again"),
        }
    }

    /// Starts a stopped persistent tansu on its port, with its data.
    pub fn start_again(&mut self) {
        let port = self.port;
        let Proc::Persistent(child, bin, dir) = &mut self.proc else {
            panic!("only a persistent tansu can be stopped and started again");
        };
        assert!(child.is_none(), "tansu is running");
        let url = format!("tcp://127.0.0.1:{port}");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("tansu.log"))
            .unwrap();
        let c = Command::new(&*bin)
            .current_dir(dir.path())
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
                "--storage-engine",
                "sqlite://tansu.db",
            ])
            // tansu logs (errors, by default) to stdout and panics to stderr
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        *child = Some(c);
        wait_for(30, "tansu to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
    }

    #[cfg(feature = "docker-tests")]
    fn docker() -> Kafka {
        use testcontainers_modules::kafka::apache;
        use testcontainers_modules::testcontainers::runners::SyncRunner;
        let node = apache::Kafka::default().start().expect(
            "FLOWBROKER_TEST_KAFKA=docker: cannot start Apache Kafka (is a Docker engine running?)",
        );
        let port = node.get_host_port_ipv4(apache::KAFKA_PORT).unwrap();
        let k = Kafka {
            proc: Proc::Docker(Box::new(node)),
            port,
        };
        for t in TOPICS {
            k.create_topic(t, 3);
        }
        k
    }

    #[cfg(not(feature = "docker-tests"))]
    fn docker() -> Kafka {
        panic!("FLOWBROKER_TEST_KAFKA=docker needs `cargo test --features docker-tests`");
    }

    pub fn brokers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn create_topic(&self, name: &str, partitions: u32) {
        use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
        let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", self.brokers())
            .create()
            .unwrap();
        let topic = NewTopic::new(name, partitions as i32, TopicReplication::Fixed(1));
        let r = block(admin.create_topics([&topic], &AdminOptions::new())).expect("create topic");
        for x in r {
            if let Err((t, code)) = x {
                assert_eq!(
                    code,
                    rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists,
                    "create topic {t}"
                );
            }
        }
    }

    pub fn producer(&self) -> Publisher {
        self.producer_lingering(0)
    }

    /// A publisher whose records wait up to `ms` to be batched (a busy producer's setting).
    pub fn producer_lingering(&self, ms: u32) -> Publisher {
        self.producer_with(ms, &[])
    }

    /// [`Kafka::producer_lingering`] with more librdkafka settings (`enable.idempotence`:
    /// at most five requests in flight, so what waits goes out together).
    pub fn producer_with(&self, ms: u32, settings: &[(&str, &str)]) -> Publisher {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", self.brokers())
            .set("linger.ms", ms.to_string());
        for (k, v) in settings {
            c.set(*k, *v);
        }
        Publisher {
            p: c.create().unwrap(),
        }
    }

    /// Collects every record of `topics` from the beginning, in a background thread.
    pub fn collect(&self, topics: &[&str]) -> Collector {
        let c = reader(&self.brokers(), topics, 10);
        let seen: Arc<Mutex<Vec<Received>>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (s2, stop2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
                    let r = Received::from_message(&m);
                    s2.lock().unwrap().push(r);
                }
            }
        });
        Collector { seen, stop }
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        if let (true, Proc::Persistent(_, _, dir)) = (std::thread::panicking(), &self.proc) {
            let log = std::fs::read_to_string(dir.path().join("tansu.log")).unwrap_or_default();
            // the first failure is the cause and later ones its echoes: it is printed even
            // when the tail has moved past it
            let first: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("panicked") || l.contains("ERROR"))
                .take(10)
                .collect();
            eprintln!("---- tansu log (first errors) ----");
            for l in first {
                eprintln!("{l}");
            }
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("---- tansu log (last lines) ----");
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
        }
        match &mut self.proc {
            Proc::Tansu(child) | Proc::Persistent(Some(child), ..) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            _ => {}
        }
    }
}

/// A `/proc/<pid>/status` field given in kB (`VmRSS:`, `VmSwap:`).
pub fn status_kib_of(pid: u32, field: &str) -> Option<u64> {
    proc_number_of(pid, "status", field)
}

/// The number after `field` in `/proc/<pid>/<file>`.
fn proc_number_of(pid: u32, file: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time process `pid` has used so far (user and system, all threads), in seconds.
pub fn cpu_secs_of(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat_ticks(&stat)?.1 / clock_ticks()?)
}

/// The name and the user and system CPU ticks in a `/proc/.../stat` line.
fn stat_ticks(stat: &str) -> Option<(&str, f64)> {
    // `pid (comm) state ...`: utime and stime are fields 14 and 15, 11 and 12 after state
    let (head, tail) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1;
    let rest: Vec<&str> = tail.split_whitespace().collect();
    let ticks = rest.get(11)?.parse::<f64>().ok()? + rest.get(12)?.parse::<f64>().ok()?;
    Some((name, ticks))
}

/// Clock ticks per second (`getconf CLK_TCK`), the unit of `/proc`'s CPU times.
fn clock_ticks() -> Option<f64> {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse::<f64>().ok())
}

/// One live thread of a process and the CPU seconds (user and system) it has used so far.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadCpu {
    pub tid: u32,
    /// Its name with a trailing number dropped (`flowbroker-proc`, `compactor`,
    /// `rdk:broker`), so that a pool's threads count together.
    pub group: String,
    pub secs: f64,
}

/// The live threads of process `pid` and their CPU so far. Compare two readings thread by
/// thread ([`ThreadCpu::tid`]): a thread that ended between them is in neither difference
/// but in [`cpu_secs_of`]'s.
pub fn cpu_by_thread_of(pid: u32) -> Vec<ThreadCpu> {
    let Some(hz) = clock_ticks() else {
        return Vec::new();
    };
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue; // ended since the listing
        };
        if let Some((name, ticks)) = stat_ticks(&stat) {
            let group = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
            threads.push(ThreadCpu {
                tid,
                group: group.to_string(),
                secs: ticks / hz,
            });
        }
    }
    threads
}

/// A record the broker produced, decoded as far as possible.
#[derive(Debug, Clone)]
pub struct Received {
    pub topic: String,
    pub key: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub payload: Option<Vec<u8>>,
    pub event: Option<Event>,
    /// The record's Kafka timestamp (ms since the epoch; the producer's clock at send).
    pub timestamp_ms: Option<i64>,
}

impl Received {
    fn from_message(m: &rdkafka::message::BorrowedMessage) -> Received {
        use cloudevents::binding::rdkafka::MessageExt;
        let headers = m
            .headers()
            .map(|h| {
                h.iter()
                    .map(|x| {
                        (
                            x.key.to_string(),
                            String::from_utf8_lossy(x.value.unwrap_or_default()).to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let event = if m.topic() == "flowbroker.dlq" {
            None
        } else {
            m.to_event()
                .ok()
                .and_then(|ce| flowbroker::cloudevent::from_sdk(&ce).ok())
        };
        Received {
            timestamp_ms: m.timestamp().to_millis(),
            topic: m.topic().to_string(),
            key: m.key().map(|k| String::from_utf8_lossy(k).to_string()),
            headers,
            payload: m.payload().map(<[u8]>::to_vec),
            event,
        }
    }
}

pub struct Collector {
    seen: Arc<Mutex<Vec<Received>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Collector {
    pub fn all(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    /// Events (deduplicated by id, first copy kept) of a type.
    pub fn events(&self, ty: &str) -> Vec<Event> {
        let mut ids = std::collections::HashSet::new();
        self.all()
            .into_iter()
            .filter_map(|r| r.event)
            .filter(|e| e.event_type == ty && ids.insert(e.id.clone()))
            .collect()
    }

    /// Waits until at least `n` distinct events of type `ty` arrived; returns them.
    pub fn wait_events(&self, ty: &str, n: usize, secs: u64) -> Vec<Event> {
        wait_for(secs, &format!("{n} events of type {ty}"), || {
            let e = self.events(ty);
            (e.len() >= n).then_some(e)
        })
    }

    /// The lifecycle event of `what` for instance `id`, waiting for it.
    pub fn lifecycle(&self, id: &str, what: &str, secs: u64) -> Event {
        let ty = format!("flowbroker.instance.{what}");
        wait_for(secs, &format!("{ty} of {id}"), || {
            self.events(&ty).into_iter().find(|e| {
                e.data
                    .as_ref()
                    .is_some_and(|d| d["instanceId"] == json!(id))
            })
        })
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

pub struct Publisher {
    p: FutureProducer,
}

/// A start event of the benches' `echo` workflow ([`ECHO`]): type `bench.ping`, id and
/// correlation `key` both `key`.
pub fn ping(key: &str, data: Value) -> Event {
    event(key, "/bench", "bench.ping", &[("key", key)], data)
}

/// What a restore must bring back of an instance: status, state, data, history length and
/// version, as `b` answers them.
pub fn restorable(b: &Broker, id: &str) -> Value {
    let v = b.instance(id);
    json!({
        "status": v["status"], "state": v["state"], "data": v["data"],
        "history": v["history"].as_array().map(Vec::len), "version": v["version"],
    })
}

/// The instance ids of `flowbroker.instance.started` lifecycle events.
pub fn instance_ids(started: &[Event]) -> Vec<String> {
    started
        .iter()
        .map(|e| {
            e.data.as_ref().unwrap()["instanceId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// A number field of a broker's log line (`partition=3` -> 3); -1 when the line has none.
pub fn log_field(line: &str, name: &str) -> i64 {
    line.split(&format!(" {name}="))
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// The restore benches' workflow: started by `bench.ping`, then waits for `bench.done`.
pub const WAITING: &str = r#"
id: wait
name: wait
events:
- {name: Ping, type: bench.ping, source: /bench, correlation: [{contextAttributeName: key}]}
- {name: Done, type: bench.done, source: /bench, correlation: [{contextAttributeName: key}]}
states:
- name: Receive
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Ping]}]
  transition: {nextState: Hold}
- name: Hold
  type: event
  eventsActions: [{eventRefs: [Done]}]
  end: {kind: default}
"#;

/// An order that waits for `order.placed`, then `order.paid`, correlated by `orderid`.
pub const ORDER: &str = r#"
id: order
name: order
events:
- {name: Placed, type: order.placed, source: /shop, correlation: [{contextAttributeName: orderid}]}
- {name: Paid, type: order.paid, source: /shop, correlation: [{contextAttributeName: orderid}]}
states:
- name: Placed
  type: event
  start: {kind: default}
  eventsActions: [{eventRefs: [Placed]}]
  transition: {nextState: Paid}
- name: Paid
  type: event
  eventsActions: [{eventRefs: [Paid]}]
  end: {kind: default}
"#;

/// Publishes event `ty` (`order.placed` or `order.paid`) of order `i` for [`ORDER`].
pub fn send_order(p: &Publisher, ty: &str, i: usize) {
    let o = format!("o{i}");
    p.send(&event(
        &format!("{ty}-{i}"),
        "/shop",
        ty,
        &[("orderid", &o)],
        serde_json::json!({"order": i, ty: true}),
    ));
}

/// A CloudEvent to publish: id, source, type, extension attributes, data.
pub fn event(id: &str, source: &str, ty: &str, attrs: &[(&str, &str)], data: Value) -> Event {
    let mut extensions = Map::new();
    for (k, v) in attrs {
        extensions.insert(k.to_string(), json!(v));
    }
    Event {
        id: id.into(),
        source: source.into(),
        event_type: ty.into(),
        time: None,
        datacontenttype: Some("application/json".into()),
        subject: None,
        data: Some(data),
        extensions,
    }
}

impl Publisher {
    /// Publishes in binary mode (`ce_` headers) to `flowbroker.in`, keyed like a well-behaved
    /// producer: by the event's first extension attribute (its correlation value), so events
    /// of one key stay in order on one partition.
    pub fn send(&self, e: &Event) {
        use cloudevents::binding::rdkafka::{FutureRecordExt, MessageRecord};
        let ce = flowbroker::cloudevent::to_sdk(e).unwrap();
        let mr = MessageRecord::from_event(ce).unwrap();
        let key = e
            .extensions
            .values()
            .next()
            .and_then(|v| v.as_str())
            .unwrap_or(&e.id)
            .to_string();
        let rec = FutureRecord::to("flowbroker.in")
            .key(&key)
            .message_record(&mr);
        block(self.p.send(rec, Duration::from_secs(10))).expect("publish");
    }

    /// Publishes in binary mode with the given Kafka key (a producer that keys at random).
    pub fn send_keyed(&self, e: &Event, key: &str) {
        use cloudevents::binding::rdkafka::{FutureRecordExt, MessageRecord};
        let ce = flowbroker::cloudevent::to_sdk(e).unwrap();
        let mr = MessageRecord::from_event(ce).unwrap();
        let rec = FutureRecord::to("flowbroker.in")
            .key(key)
            .message_record(&mr);
        block(self.p.send(rec, Duration::from_secs(10))).expect("publish");
    }

    /// Enqueues in binary mode without waiting for the acknowledgement (bursts); see `flush`.
    pub fn send_nowait(&self, e: &Event) {
        use cloudevents::binding::rdkafka::{FutureRecordExt, MessageRecord};
        let ce = flowbroker::cloudevent::to_sdk(e).unwrap();
        let mr = MessageRecord::from_event(ce).unwrap();
        let key = e.id.clone();
        loop {
            let rec = FutureRecord::to("flowbroker.in")
                .key(&key)
                .message_record(&mr);
            match self.p.send_result(rec) {
                Ok(_) => return,
                // queue full: let deliveries drain, then retry
                Err((_, _)) => self.p.poll(Duration::from_millis(10)),
            }
        }
    }

    /// Enqueues `n` [`ping`]s keyed `{tag}{i}` with data `data(i)`, `gap` apart when given
    /// (pacing a load, not waiting for a condition), then waits for them all.
    pub fn send_pings(
        &self,
        tag: &str,
        n: usize,
        gap: Option<Duration>,
        data: impl Fn(usize) -> Value,
    ) {
        let t0 = Instant::now();
        for i in 0..n {
            if let Some(gap) = gap {
                let due = t0 + gap.mul_f64(i as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            self.send_nowait(&ping(&format!("{tag}{i}"), data(i)));
        }
        self.flush();
    }

    /// Waits until everything enqueued is acknowledged.
    pub fn flush(&self) {
        use rdkafka::producer::Producer;
        self.p.flush(Duration::from_secs(60)).expect("flush");
    }

    /// Publishes in structured mode (`application/cloudevents+json`).
    pub fn send_structured(&self, e: &Event) {
        let ce = flowbroker::cloudevent::to_sdk(e).unwrap();
        let body = serde_json::to_vec(&ce).unwrap();
        let headers = rdkafka::message::OwnedHeaders::new().insert(rdkafka::message::Header {
            key: "content-type",
            value: Some("application/cloudevents+json"),
        });
        let rec = FutureRecord::<str, _>::to("flowbroker.in")
            .payload(&body)
            .headers(headers);
        block(self.p.send(rec, Duration::from_secs(10))).expect("publish");
    }

    /// Publishes raw bytes (for malformed records).
    pub fn send_raw(&self, payload: &[u8]) {
        let rec = FutureRecord::<str, _>::to("flowbroker.in").payload(payload);
        block(self.p.send(rec, Duration::from_secs(10))).expect("publish");
    }

    /// Publishes raw bytes to partition `partition` of `topic`.
    pub fn send_to(&self, topic: &str, partition: i32, payload: &[u8]) {
        let rec = FutureRecord::<str, _>::to(topic)
            .partition(partition)
            .payload(payload);
        block(self.p.send(rec, Duration::from_secs(10))).expect("publish");
    }

    /// Publishes a payload with the given headers (`None` = a header without a value).
    pub fn send_with_headers(&self, payload: &[u8], headers: &[(&str, Option<&str>)]) {
        let mut h = rdkafka::message::OwnedHeaders::new();
        for (k, v) in headers {
            h = h.insert(rdkafka::message::Header { key: k, value: *v });
        }
        let rec = FutureRecord::<str, _>::to("flowbroker.in")
            .payload(payload)
            .headers(h);
        block(self.p.send(rec, Duration::from_secs(10))).expect("publish");
    }
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

/// The flowbroker binary, run with a config from environment variables.
pub struct Broker {
    child: Option<Child>,
    pub http: String,
    pub dir: PathBuf,
    env: Vec<(String, String)>,
    bin: PathBuf,
    /// Sent as `Authorization: Bearer …` (from `FLOWBROKER_HTTP_AUTH_TOKEN` in the env).
    token: Option<String>,
    _tmp: Option<tempfile::TempDir>,
}

impl Broker {
    /// Starts the broker with workflows `(file name, text)` in a fresh directory.
    pub fn start(kafka: &Kafka, workflows: &[(&str, &str)], env: &[(&str, &str)]) -> Broker {
        Broker::start_bin(env!("CARGO_BIN_EXE_flowbroker"), kafka, workflows, env)
    }

    /// [`Broker::start`] with another build of the binary (a bench's baseline).
    pub fn start_bin(
        bin: impl Into<PathBuf>,
        kafka: &Kafka,
        workflows: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Broker {
        let mut b = Broker::prepare(bin.into(), kafka, workflows, env);
        b.spawn();
        b
    }

    /// Starts the broker and returns as soon as its HTTP listener answers, while it is still
    /// joining the consumer group (no partitions assigned yet).
    pub fn start_joining(
        kafka: &Kafka,
        workflows: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Broker {
        let mut b = Broker::prepare(
            env!("CARGO_BIN_EXE_flowbroker").into(),
            kafka,
            workflows,
            env,
        );
        b.launch();
        let url = format!("http://{}/health", b.http);
        wait_for(40, "flowbroker's HTTP listener", || {
            reqwest::blocking::get(&url).ok()?.json::<Value>().ok()
        });
        b
    }

    fn prepare(
        bin: PathBuf,
        kafka: &Kafka,
        workflows: &[(&str, &str)],
        env: &[(&str, &str)],
    ) -> Broker {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("workflows")).unwrap();
        for (name, text) in workflows {
            std::fs::write(dir.join("workflows").join(name), text).unwrap();
        }
        let http = format!("127.0.0.1:{}", free_port());
        let mut all = vec![
            ("FLOWBROKER_KAFKA_BROKERS".to_string(), kafka.brokers()),
            ("FLOWBROKER_KAFKA_GROUP_ID".into(), "flowbroker-test".into()),
            ("FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS".into(), "10".into()),
            ("FLOWBROKER_KAFKA_SESSION_TIMEOUT_MS".into(), "6000".into()),
            // the processor pool, which the default leaves out on 2 cores, runs in every test
            (PROCESSOR_THREADS.into(), "2".into()),
            (
                "FLOWBROKER_DATA_DIR".into(),
                dir.join("data").display().to_string(),
            ),
            (
                "FLOWBROKER_WORKFLOWS_DIR".into(),
                dir.join("workflows").display().to_string(),
            ),
            ("FLOWBROKER_HTTP_LISTEN".into(), http.clone()),
            ("FLOWBROKER_WATCH_INTERVAL_MS".into(), "100".into()),
        ];
        for (k, v) in env {
            all.push((k.to_string(), v.to_string()));
        }
        // a test that listens elsewhere (`0.0.0.0:…`) is still reached on loopback
        let http = all
            .iter()
            .rev()
            .find(|(k, _)| k == "FLOWBROKER_HTTP_LISTEN")
            .map(|(_, v)| v.replace("0.0.0.0:", "127.0.0.1:"))
            .unwrap_or(http);
        let token = all
            .iter()
            .rev()
            .find(|(k, _)| k == "FLOWBROKER_HTTP_AUTH_TOKEN")
            .map(|(_, v)| v.clone());
        Broker {
            child: None,
            http,
            dir,
            env: all,
            bin,
            token,
            _tmp: Some(tmp),
        }
    }

    fn spawn(&mut self) {
        self.launch();
        let url = format!("http://{}/health", self.http);
        let log = self.dir.join("broker.log");
        wait_for(40, "flowbroker to be assigned its partitions", || {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    panic!(
                        "flowbroker exited with {status}:\n{}",
                        std::fs::read_to_string(&log).unwrap_or_default()
                    );
                }
            }
            let v: Value = reqwest::blocking::get(&url).ok()?.json().ok()?;
            let k = &v["kafka"];
            match k.get("assignedStatePartitions") {
                // both groups: state partitions, and the input group's answer (a broker past
                // the input topics' partition count is assigned none)
                Some(state) => {
                    (state.as_u64()? > 0 && k["assignedInputPartitions"].is_u64()).then_some(())
                }
                // a build from before the two groups (a bench's baseline)
                None => (k["assignedPartitions"].as_u64()? > 0).then_some(()),
            }
        });
    }

    /// Starts the process.
    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("broker.log"))
            .unwrap();
        let child = Command::new(&self.bin)
            .arg("run")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("FLOWBROKER_LOG", "info,flowbroker=debug")
            .envs(self.env.iter().cloned())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start flowbroker");
        self.child = Some(child);
    }

    /// Sets an environment variable for the next start ([`Broker::restart`],
    /// [`Broker::start_again`]).
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// SIGKILL, then starts the process again on its data directory and returns once its
    /// HTTP listener answers, before the consumer group has assigned it anything.
    pub fn restart_joining(&mut self) {
        self.kill();
        self.launch();
        let url = format!("http://{}/health", self.http);
        wait_for(40, "flowbroker's HTTP listener", || {
            reqwest::blocking::get(&url).ok()?.json::<Value>().ok()
        });
    }

    /// Starts a process stopped with [`Broker::kill`] or [`Broker::terminate`] again, with its
    /// data directory as it was.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "still running");
        self.spawn();
    }

    /// Freezes the process (SIGSTOP: a long GC pause, a stalled VM) or lets it go on
    /// (SIGCONT).
    pub fn freeze(&self, frozen: bool) {
        let pid = self.pid().expect("the broker runs");
        let sig = if frozen { "-STOP" } else { "-CONT" };
        let ok = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {sig} {pid}");
    }

    /// SIGTERM: a graceful stop (the broker stops writing and flushes; it leaves the group
    /// only with `kafka.leave_group_on_stop`); waits for the exit.
    pub fn terminate(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let end = Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                if Instant::now() > end {
                    let _ = c.kill();
                    let _ = c.wait();
                    panic!("flowbroker did not exit within 20 s of SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Whether the process is still alive (not exited, not a zombie waiting to be reaped).
    pub fn alive(&self) -> bool {
        let Some(c) = self.child.as_ref() else {
            return false;
        };
        std::fs::read_to_string(format!("/proc/{}/stat", c.id()))
            .ok()
            .and_then(|s| {
                // `pid (comm) state ...`: the state follows the last ')'
                let rest = &s[s.rfind(')')? + 1..];
                rest.split_whitespace().next().map(|st| st != "Z")
            })
            .unwrap_or(false)
    }

    /// The broker process's resident set in KiB (Linux `/proc`), while it runs.
    pub fn rss_kib(&self) -> Option<u64> {
        self.status_kib("VmRSS:")
    }

    /// The process's memory swapped out, in KiB (0 on a machine without swap).
    pub fn swap_kib(&self) -> Option<u64> {
        self.status_kib("VmSwap:")
    }

    /// A `/proc/<pid>/status` field given in kB.
    fn status_kib(&self, field: &str) -> Option<u64> {
        status_kib_of(self.child.as_ref()?.id(), field)
    }

    /// The number after `field` in the process's `/proc/<pid>/<file>`.
    fn proc_number(&self, file: &str, field: &str) -> Option<u64> {
        proc_number_of(self.child.as_ref()?.id(), file, field)
    }

    /// CPU time the process has used so far (user and system, all threads), in seconds.
    pub fn cpu_secs(&self) -> Option<f64> {
        cpu_secs_of(self.child.as_ref()?.id())
    }

    /// [`cpu_by_thread_of`] the process.
    pub fn cpu_by_thread(&self) -> Vec<ThreadCpu> {
        self.child
            .as_ref()
            .map_or_else(Vec::new, |c| cpu_by_thread_of(c.id()))
    }

    /// Bytes the process has written so far (`wchar` in `/proc/PID/io`: every write call,
    /// whether or not it reached the disk yet).
    pub fn written_bytes(&self) -> Option<u64> {
        self.proc_number("io", "wchar:")
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A request to this broker's API, with its token if it has one.
    pub fn request(
        &self,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::blocking::RequestBuilder {
        let r =
            reqwest::blocking::Client::new().request(method, format!("http://{}{path}", self.http));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// `GET /metrics` as text.
    pub fn metrics(&self) -> String {
        self.request(reqwest::Method::GET, "/metrics")
            .send()
            .and_then(|r| r.text())
            .unwrap_or_default()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("broker.log")).unwrap_or_default()
    }

    pub fn workflow_path(&self, name: &str) -> PathBuf {
        self.dir.join("workflows").join(name)
    }

    pub fn get(&self, path: &str) -> (u16, Value) {
        let r = self.request(reqwest::Method::GET, path).send().unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .request(reqwest::Method::POST, path)
            .json(&body)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    /// `GET /v1/instances/{id}`, retried while it answers 503 (a state partition without an
    /// owner yet, during start or a hand-off).
    pub fn instance(&self, id: &str) -> Value {
        let (status, v) = wait_for(30, &format!("instance {id} to be readable"), || {
            let (status, v) = self.get(&format!("/v1/instances/{id}"));
            (status != 503).then_some((status, v))
        });
        assert_eq!(status, 200, "GET instance {id}: {v}");
        v
    }

    /// Waits until instance `id` has status `status`.
    pub fn wait_status(&self, id: &str, status: &str, secs: u64) -> Value {
        wait_for(secs, &format!("instance {id} to be {status}"), || {
            let (code, v) = self.get(&format!("/v1/instances/{id}"));
            (code == 200 && v["status"] == json!(status)).then_some(v)
        })
    }

    /// The state partitions this broker owns now (`/health`).
    pub fn owned(&self) -> Vec<u16> {
        let (_, v) = self.get("/health");
        v["statePartitions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_u64().map(|n| n as u16))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Instances of a workflow: a whole answer, waited for while a state partition has no
    /// owner to answer for it (the API lists it under `statePartitions.unavailable`, as
    /// during a take-over after a restart).
    pub fn instances(&self, workflow: &str) -> Vec<Value> {
        wait_for(120, "an answer for every state partition", || {
            let (_, v) = self.get(&format!(
                "/v1/instances?workflowId={workflow}&limit=1000000"
            ));
            let whole = v["statePartitions"]["unavailable"]
                .as_array()
                .is_none_or(|u| u.is_empty());
            whole.then(|| v["instances"].as_array().cloned().unwrap_or_default())
        })
    }
}

/// The state partition an instance id carries (`p{n}-...`).
pub fn partition_of(id: &str) -> u16 {
    id.parse::<flowbroker::cluster::partition::InstanceId>()
        .unwrap_or_else(|e| panic!("{id}: {e}"))
        .partition()
        .0
}

/// The sum of the series of metric `name` (every label set, or those containing `with`) in a
/// Prometheus text exposition, as `sum(name{with})` would give.
pub fn metric_sum(text: &str, name: &str, with: &str) -> i64 {
    metric_sum_f64(text, name, with) as i64
}

/// Each table's figure of the `/metrics` family `name` (`..._total{table="..."}`).
pub fn by_table(metrics: &str, name: &str) -> Vec<(String, f64)> {
    let prefix = format!("{name}{{table=\"");
    metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(&prefix)?;
            let (table, n) = rest.split_once("\"} ")?;
            Some((table.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// [`metric_sum`] without rounding (histogram sums in seconds).
pub fn metric_sum_f64(text: &str, name: &str, with: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let rest = series.strip_prefix(name)?;
            let ok = (rest.is_empty() || rest.starts_with('{')) && rest.contains(with);
            ok.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum::<f64>()
}

impl Drop for Broker {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("---- flowbroker log ----\n{}", self.log());
            if let Some(msg) = TIMED_OUT.with(|t| t.borrow().clone()) {
                eprintln!("---- the wait that timed out (repeated) ----\n{msg}");
            }
        }
        self.kill();
    }
}

/// A real HTTP function server on a free port. Each path answers by `handler(path, body)`;
/// every call is recorded with its `Idempotency-Key`.
pub struct Functions {
    pub base: String,
    pub calls: Arc<Mutex<Vec<(String, String, Value)>>>,
    /// The headers of each call, in the order of `calls`.
    headers: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
    /// While false, calls are recorded and then wait (see [`Functions::held`]).
    open: Arc<tokio::sync::watch::Sender<bool>>,
    _rt: tokio::runtime::Runtime,
}

type Handler = Arc<dyn Fn(&str, &Value) -> (u16, Value) + Send + Sync>;

impl Functions {
    pub fn start(
        handler: impl Fn(&str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> Functions {
        Functions::with_gate(handler, true)
    }

    /// Like [`Functions::start`], but every call is recorded and then held, unanswered, until
    /// [`Functions::release`]: calls stay in flight as long as a test needs.
    pub fn held(
        handler: impl Fn(&str, &Value) -> (u16, Value) + Send + Sync + 'static,
    ) -> Functions {
        Functions::with_gate(handler, false)
    }

    /// Answers the held calls and every later one.
    pub fn release(&self) {
        self.open.send_replace(true);
    }

    fn with_gate(
        handler: impl Fn(&str, &Value) -> (u16, Value) + Send + Sync + 'static,
        open: bool,
    ) -> Functions {
        let (open, _) = tokio::sync::watch::channel(open);
        let open = Arc::new(open);
        let gate = open.clone();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let calls: Arc<Mutex<Vec<(String, String, Value)>>> = Arc::default();
        let seen: Arc<Mutex<Vec<BTreeMap<String, String>>>> = Arc::default();
        let handler: Handler = Arc::new(handler);
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let c2 = calls.clone();
        let h2 = seen.clone();
        let app = axum::Router::new().fallback(
            move |uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (calls, handler, seen) = (c2.clone(), handler.clone(), h2.clone());
                let mut gate = gate.subscribe();
                async move {
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let key = headers
                        .get("idempotency-key")
                        .and_then(|h| h.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    {
                        let mut calls = calls.lock().unwrap();
                        calls.push((uri.path().to_string(), key, v.clone()));
                        seen.lock().unwrap().push(
                            headers
                                .iter()
                                .map(|(k, v)| {
                                    (k.to_string(), v.to_str().unwrap_or_default().to_string())
                                })
                                .collect(),
                        );
                    }
                    let _ = gate.wait_for(|open| *open).await;
                    let (code, out) = handler(uri.path(), &v);
                    (
                        axum::http::StatusCode::from_u16(code).unwrap(),
                        axum::Json(out),
                    )
                }
            },
        );
        rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
        Functions {
            base,
            calls,
            headers: seen,
            open,
            _rt: rt,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn calls(&self) -> Vec<(String, String, Value)> {
        self.calls.lock().unwrap().clone()
    }

    /// The headers each call came with (lowercase names), in the order of [`Functions::calls`].
    pub fn call_headers(&self) -> Vec<BTreeMap<String, String>> {
        let _calls = self.calls.lock().unwrap();
        self.headers.lock().unwrap().clone()
    }
}

/// The `K=V` pairs, separated by spaces, that environment variable `var` holds (a bench's
/// extra settings for the broker it starts); none when it is not set.
pub fn env_pairs(var: &str) -> Vec<(String, String)> {
    std::env::var(var)
        .unwrap_or_default()
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv
                .split_once('=')
                .unwrap_or_else(|| panic!("{var}: K=V pairs separated by spaces"));
            (k.to_string(), v.to_string())
        })
        .collect()
}
