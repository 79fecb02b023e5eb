//! Broker configuration: one TOML file (`flowbroker run --config FILE`) with every key also
//! settable by a `FLOWBROKER_…` environment variable. The doc comments on these structs are
//! the user documentation (README "Configuration" mirrors them).
//!
//! Environment names are the key path in upper case joined by `_`: `kafka.group_id` is
//! `FLOWBROKER_KAFKA_GROUP_ID`, `http.listen` is `FLOWBROKER_HTTP_LISTEN`. Lists take a TOML
//! array or a comma-separated string (`FLOWBROKER_KAFKA_INPUT_TOPICS=a,b`). Tables of free
//! names take `name=value` pairs separated by commas (`FLOWBROKER_FUNCTIONS=greet=http://…`,
//! `FLOWBROKER_KAFKA_PROPERTIES=security.protocol=SASL_SSL,sasl.mechanism=PLAIN`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Directory of workflow definitions (`*.json`, `*.yaml`, `*.yml`, searched recursively),
    /// deployed at start and on every change.
    pub workflows_dir: PathBuf,
    /// Where the embedded store keeps its files (`data_dir/store`).
    pub data_dir: PathBuf,
    /// How often the workflow directory is checked for changes, in milliseconds.
    pub watch_interval_ms: u64,
    /// `source` of produced events; `{workflowId}` is replaced.
    pub event_source: String,
    /// How long an event that arrived before its instance waits for it is kept (ISO 8601
    /// duration). An event definition's `metadata.bufferTtl` overrides it.
    pub buffer_ttl: String,
    /// Consumed events with the `source` and `id` of one seen within this window (ISO 8601
    /// duration) are duplicates: dropped and counted, never applied twice. `PT0S` turns it off.
    pub dedupe_window: String,
    /// How long finished instances and their history are kept (ISO 8601 duration); empty keeps
    /// them forever.
    pub retention: String,
    /// IANA zone for cron schedules without a `timezone` (empty: the machine's zone, else UTC).
    pub timezone: String,
    pub kafka: KafkaConfig,
    pub http: HttpConfig,
    /// Function name or resource -> URL, for functions whose resource is not an http(s) URL.
    pub functions: BTreeMap<String, String>,
    pub invoke: InvokeConfig,
    pub schedules: ScheduleConfig,
    pub cluster: ClusterConfig,
    pub history: HistoryConfig,
    pub store: StoreConfig,
    /// Problems that did not stop loading (unknown `FLOWBROKER_*` variables), for the log.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// [`Config`]'s durations as values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Windows {
    pub buffer_ttl: chrono::Duration,
    pub dedupe: chrono::Duration,
    /// `None`: keep finished instances forever.
    pub retention: Option<chrono::Duration>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaConfig {
    /// `bootstrap.servers`.
    pub brokers: String,
    pub group_id: String,
    pub input_topics: Vec<String>,
    /// Default topic of produced workflow events.
    pub output_topic: String,
    /// Topic of `flowbroker.instance.*` lifecycle events.
    pub lifecycle_topic: String,
    /// Topic of records that are not valid CloudEvents, with the reason in headers.
    pub dlq_topic: String,
    /// Send events that match no workflow to the dead-letter topic too (they are always counted).
    pub dlq_unmatched: bool,
    /// The largest produced event (its JSON) a workflow may emit; a larger one fails its state
    /// with `EventTooLarge` before anything is committed. Keep it below the topics'
    /// `max.message.bytes` (Kafka's default is 1 MB, headers and batch overhead included).
    pub max_event_bytes: usize,
    /// The largest consumed record (payload and headers) read as an event; a larger one goes
    /// to the dead-letter topic as `too_large`, with its headers but without its payload (the
    /// original stays in its input topic, at the offset the copy names).
    pub max_input_bytes: usize,
    /// Per event type topics for produced events (`type -> topic`).
    pub topics: BTreeMap<String, String>,
    /// `binary` (CloudEvents attributes in `ce_` headers) or `structured`
    /// (`application/cloudevents+json` body) for produced events.
    pub output_mode: OutputMode,
    /// Where a new consumer group starts: `earliest` (default) or `latest`.
    pub auto_offset_reset: String,
    /// `fetch.wait.max.ms`: the longest a fetch waits for records (latency vs. requests).
    pub fetch_wait_max_ms: u32,
    pub session_timeout_ms: u32,
    /// The shortest time between two input offset commits to the group; one commit is in
    /// flight at a time, and a graceful stop commits once more. Commits say where the group's
    /// next reader starts; positions stored with each batch decide what is applied, so a
    /// longer interval means more read again after a failover, never more applied. 0: one
    /// commit after another, each with what landed while the one before was out. More than
    /// a day acts as a day.
    pub commit_interval_ms: u64,
    /// Leave the consumer group when the broker stops (SIGTERM, Ctrl-C), so its partitions
    /// move at once instead of after `session_timeout_ms`. Off by default: tansu wedges a
    /// group for good when its leader leaves while the group is still forming (a broker
    /// stopped mid-join, a rolling restart during a rebalance; docs/scale.md "Membership").
    /// Turn it on with Apache Kafka for faster hand-offs on a graceful stop.
    pub leave_group_on_stop: bool,
    /// Static membership (KIP-345): each of the broker's group members carries its node id
    /// (its data directory's, kept across restarts) as `group.instance.id`, so a broker
    /// restarted within `session_timeout_ms` gets its partitions back without a rebalance.
    /// Off by default: tansu never expires a static member that does not return, so its
    /// partitions would stay unowned (docs/scale.md "Membership"). Turn it on with Apache
    /// Kafka. A restarted broker resumes its partitions at once either way ("Restart").
    pub static_membership: bool,
    /// librdkafka's `partition.assignment.strategy`, for both of the broker's groups (input
    /// topics, and state partitions in `{group_id}.state`). `cooperative-sticky` (default):
    /// a rebalance moves only the partitions that change hands and the others keep working
    /// (KIP-429); `range`: eager, every partition is revoked and assigned again
    /// (docs/scale.md "Membership").
    pub assignment_strategy: String,
    /// Records handled in one store transaction at most.
    pub batch_size: usize,
    /// Backpressure: while more outbox records (with the producer) and function calls (with
    /// the invoker) than this are out and not heard back about, the consumers pause their
    /// partitions; they resume at half of it. Bounds memory whatever the offered rate
    /// (about 3 KB per record out).
    pub max_in_flight: usize,
    /// Create missing topics at start (when the Kafka broker allows it).
    pub create_topics: bool,
    /// Partitions of topics created at start.
    pub topic_partitions: i32,
    /// Passed to rdkafka as is (SASL, TLS, anything); wins over the keys above.
    pub properties: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    Binary,
    Structured,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Admin API, CloudEvents ingress and metrics. Empty disables the HTTP server.
    pub listen: String,
    /// The address other brokers use to reach this one's API (they forward requests for the
    /// state partitions it owns). Empty: `http://{listen}`, with the host name in place of an
    /// unspecified address (`0.0.0.0`, `[::]`).
    pub advertised_url: String,
    /// Bearer token every request must carry (`Authorization: Bearer …`) except `GET /health`:
    /// the admin API, the events ingress and `/metrics`. Empty: no token. Brokers of one
    /// cluster share it (they send it when they forward a request to each other).
    pub auth_token: String,
    /// A file holding the token (surrounding whitespace is ignored), for a mounted secret;
    /// used when `auth_token` is empty.
    pub auth_token_file: String,
    /// Serve on an address beyond loopback without a token. Off by default: such a `listen`
    /// without a token refuses to start.
    pub insecure: bool,
    /// The largest request body accepted, in bytes; a larger one is answered 413.
    pub max_body_bytes: usize,
    /// With `auth_token` set: the AWS key pair that AWS SDKs and tools sign their requests
    /// with (SigV4) on the AWS API's paths (durable functions). Requests signed with another
    /// key, or unsigned and without the bearer token, are refused. Empty: those paths take
    /// the bearer token only.
    pub aws_access_key_id: String,
    pub aws_secret_access_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct InvokeConfig {
    /// Transport timeout of one function call in milliseconds (the workflow's action
    /// `timeout` is a separate, durable timer).
    pub timeout_ms: u64,
    /// Function calls in flight at most; more wait their turn.
    pub concurrency: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleConfig {
    /// Ticks missed while the broker was down: `none`, `one` or `all`. A workflow's
    /// `metadata.catchUp` overrides it.
    pub catch_up: CatchUp,
    /// With `all`, at most this many missed ticks fire per schedule.
    pub max_catch_up: u32,
}

/// What an instance's history keeps (docs/broker.md "History").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// A payload in a history entry (event data, function arguments and results, child input
    /// and output, workflow output) larger than about this many bytes is stored beside the
    /// entry, which keeps a summary in its place; the API returns it in full.
    pub inline_bytes: usize,
    /// The most entries one instance keeps: past it, the oldest entry and its payloads are
    /// dropped, so a looping instance's history stays bounded.
    pub max_entries: u64,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            inline_bytes: 1024,
            max_entries: 10_000,
        }
    }
}

/// The embedded store's memory (docs/store.md "Memory"). The three bound what the store keeps
/// in memory whatever the load; the broker's other memory is bounded by `kafka.max_in_flight`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// Writes kept in memory (fjall's memtables, over every table) before they are flushed
    /// to disk, in MiB (at least 1). Smaller flushes more often, in smaller files.
    pub write_buffer_mib: u64,
    /// Blocks read from disk kept for the next read (fjall's block cache), in MiB (at least 1).
    pub cache_mib: u64,
    /// The records of instances that wait (not finished) kept in memory as stored, so that
    /// the event or timer that continues one does not read it from disk, in MiB (0, the
    /// default: none). Fills only with waiting instances; the first kept leave first. Size it
    /// to hold every waiting instance (about 600 bytes each), or leave it off.
    pub resident_mib: u64,
    /// A table is merged to drop the tombstones of its deleted keys once its files hold at
    /// least this many, and at least a quarter of their entries (docs/store.md "Costs we
    /// accept"); 0 never merges.
    pub merge_tombstones: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let bytes = crate::store::Memory::default();
        StoreConfig {
            write_buffer_mib: bytes.write_buffer >> 20,
            cache_mib: bytes.cache >> 20,
            resident_mib: bytes.resident >> 20,
            merge_tombstones: crate::store::MIN_TOMBSTONES,
        }
    }
}

impl StoreConfig {
    /// The store's options, in bytes.
    pub fn memory(&self) -> crate::store::Memory {
        crate::store::Memory {
            write_buffer: self.write_buffer_mib.max(1) << 20,
            cache: self.cache_mib.max(1) << 20,
            resident: self.resident_mib << 20,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CatchUp {
    None,
    One,
    All,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            workflows_dir: "./workflows".into(),
            data_dir: "./data".into(),
            watch_interval_ms: 1000,
            event_source: "/flowbroker/{workflowId}".into(),
            buffer_ttl: "PT24H".into(),
            dedupe_window: "PT10M".into(),
            retention: "P7D".into(),
            timezone: String::new(),
            kafka: KafkaConfig::default(),
            http: HttpConfig::default(),
            functions: BTreeMap::new(),
            invoke: InvokeConfig::default(),
            schedules: ScheduleConfig::default(),
            cluster: ClusterConfig::default(),
            history: HistoryConfig::default(),
            store: StoreConfig::default(),
            warnings: Vec::new(),
        }
    }
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            brokers: "127.0.0.1:9092".into(),
            group_id: "flowbroker".into(),
            input_topics: vec!["flowbroker.in".into()],
            output_topic: "flowbroker.out".into(),
            lifecycle_topic: "flowbroker.lifecycle".into(),
            dlq_topic: "flowbroker.dlq".into(),
            dlq_unmatched: false,
            max_event_bytes: crate::engine::Limits::default().max_event_bytes,
            max_input_bytes: 1024 * 1024,
            topics: BTreeMap::new(),
            output_mode: OutputMode::Binary,
            auto_offset_reset: "earliest".into(),
            fetch_wait_max_ms: 100,
            session_timeout_ms: 10_000,
            commit_interval_ms: 1000,
            leave_group_on_stop: false,
            static_membership: false,
            assignment_strategy: "cooperative-sticky".into(),
            batch_size: 500,
            max_in_flight: 10_000,
            create_topics: true,
            topic_partitions: 3,
            properties: BTreeMap::new(),
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: "127.0.0.1:8080".into(),
            advertised_url: String::new(),
            auth_token: String::new(),
            auth_token_file: String::new(),
            insecure: false,
            max_body_bytes: 1024 * 1024,
            aws_access_key_id: String::new(),
            aws_secret_access_key: String::new(),
        }
    }
}

impl HttpConfig {
    /// The bearer token: `auth_token`, else the contents of `auth_token_file`; `None` when
    /// neither is set.
    pub fn token(&self) -> Result<Option<String>, String> {
        if !self.auth_token.is_empty() {
            return Ok(Some(self.auth_token.clone()));
        }
        if self.auth_token_file.is_empty() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&self.auth_token_file).map_err(|e| {
            format!(
                "http.auth_token_file = {:?}: cannot read it: {e}",
                self.auth_token_file
            )
        })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(format!(
                "http.auth_token_file = {:?} is empty: write the token into it",
                self.auth_token_file
            ));
        }
        Ok(Some(token.to_string()))
    }

    /// Whether `listen` accepts connections from loopback only (a host name other than
    /// `localhost` counts as reachable from elsewhere).
    pub fn loopback_only(&self) -> bool {
        if let Ok(a) = self.listen.parse::<std::net::SocketAddr>() {
            return a.ip().is_loopback();
        }
        let host = self.listen.rsplit_once(':').map_or("", |(h, _)| h);
        host.eq_ignore_ascii_case("localhost")
    }

    /// The AWS key pair signed requests must use, when one is configured.
    pub fn aws_key(&self) -> Option<crate::http::sigv4::AwsKey> {
        (!self.aws_access_key_id.is_empty()).then(|| crate::http::sigv4::AwsKey {
            access_key_id: self.aws_access_key_id.clone(),
            secret: self.aws_secret_access_key.clone(),
        })
    }

    /// Refuses an open API beyond loopback (see `insecure`) and unreadable token files.
    fn check(&self) -> Result<(), String> {
        let token = self.token()?;
        if token.is_some() && self.listen.is_empty() {
            return Ok(());
        }
        if token.is_none() && !self.listen.is_empty() && !self.loopback_only() && !self.insecure {
            return Err(format!(
                "http.listen = {:?} is reachable from other machines and no token is set: \
                 set http.auth_token (or FLOWBROKER_HTTP_AUTH_TOKEN, or http.auth_token_file), \
                 or set http.insecure = true to serve the API without a token",
                self.listen
            ));
        }
        if self.aws_access_key_id.is_empty() != self.aws_secret_access_key.is_empty() {
            return Err(
                "http.aws_access_key_id and http.aws_secret_access_key go together: set both \
                 (the key pair AWS SDKs sign with) or neither"
                    .into(),
            );
        }
        if self.max_body_bytes == 0 {
            return Err("http.max_body_bytes = 0: give the largest request body in bytes".into());
        }
        Ok(())
    }

    /// `advertised_url`, or the URL derived from `listen` (`host` names this machine).
    pub fn advertised(&self, host: &str) -> String {
        if !self.advertised_url.is_empty() {
            return self.advertised_url.trim_end_matches('/').to_string();
        }
        let (ip, port) = self
            .listen
            .rsplit_once(':')
            .unwrap_or((self.listen.as_str(), "80"));
        let ip = match ip {
            "0.0.0.0" | "[::]" | "::" | "" => host,
            ip => ip,
        };
        format!("http://{ip}:{port}")
    }
}

impl Default for InvokeConfig {
    fn default() -> Self {
        InvokeConfig {
            timeout_ms: 30_000,
            concurrency: 64,
        }
    }
}

/// Scale-out (docs/scale.md): state lives in `partitions` state partitions, each owned by one
/// broker of the consumer group.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// The number of state partitions: partitions of the work and changelog topics. Fixed when
    /// those topics are created (a broker reads it from the topics after that); more
    /// partitions let more brokers share the work.
    pub partitions: usize,
    /// The internal topic every input travels on to the state partition that owns it.
    pub work_topic: String,
    /// The internal topic each state partition writes its committed batches to.
    pub changelog_topic: String,
    /// The internal topic where a broker announces the state partitions it took over (and
    /// its `http.advertised_url`), so that any broker's API can answer for any instance.
    pub owners_topic: String,
    /// The internal topic (one partition, compacted) a broker publishes the workflow files it
    /// deploys to, and deploys every other broker's from, so all brokers run the same
    /// definitions. Empty: each broker deploys only its own `workflows_dir`.
    pub definitions_topic: String,
    /// The internal topic (`partitions` partitions) each state partition's snapshots are
    /// written to, in chunks (docs/scale.md "Snapshots").
    pub snapshot_topic: String,
    /// A partition is snapshotted once this many changelog records were appended since its
    /// last snapshot (0: never by count).
    pub snapshot_every_records: u64,
    /// ... or once this long passed since its last snapshot with anything appended (0:
    /// never by time),
    pub snapshot_interval_ms: u64,
    /// ... and the changelog batches appended since add up to at least this percentage of the
    /// latest snapshot's bytes (0: any growth), so a large state that changes little is not
    /// rewritten whole every interval. Applies once that snapshot is one this broker wrote
    /// since it took the partition over; before, time alone decides.
    pub snapshot_min_growth_percent: u32,
    /// After a snapshot, delete the changelog records before it and the snapshot records
    /// before it (DeleteRecords). After a refusal no snapshot asks for 30 s, the wait
    /// doubling while refusals continue, up to an hour (a broker that does not implement it);
    /// the first snapshot after the wait trims everything before it.
    pub trim_changelog: bool,
    /// After a restart on the same `data_dir`, take back at once the state partitions this
    /// broker held last (nobody wrote to them since) and read its last input partitions, before
    /// the consumer group assigns anything (docs/scale.md "Restart").
    pub resume_on_restart: bool,
    /// Standby replicas per state partition: brokers that keep a warm copy of a partition
    /// they do not own by tailing its changelog, so a failover restores only the last records
    /// (Kafka Streams' `num.standby.replicas`; docs/scale.md "Standby replicas").
    pub standby_replicas: usize,
    /// Threads that apply state partitions' batches at once, one partition each at a time
    /// (docs/broker.md "Partition processors"); 0: one per core less one (1 on 2 cores);
    /// 1: the core thread applies every partition in turn.
    pub processor_threads: usize,
    /// Producers the changelog's appends and fences go through, each state partition always
    /// through the same one, each with its own connections (docs/broker.md "Changelog
    /// producers"); 0: enough that every partition's pipelined appends fit in what one
    /// connection keeps in flight (5 with 12 partitions).
    pub changelog_producers: usize,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            partitions: 12,
            work_topic: "flowbroker.work".into(),
            changelog_topic: "flowbroker.changelog".into(),
            owners_topic: "flowbroker.owners".into(),
            definitions_topic: "flowbroker.definitions".into(),
            snapshot_topic: "flowbroker.snapshots".into(),
            snapshot_every_records: 50_000,
            snapshot_interval_ms: 600_000,
            snapshot_min_growth_percent: 50,
            trim_changelog: true,
            resume_on_restart: true,
            standby_replicas: 0,
            processor_threads: 0,
            changelog_producers: 0,
        }
    }
}

impl ClusterConfig {
    pub fn parts(&self) -> crate::cluster::partition::Partitions {
        crate::cluster::partition::Partitions::new(self.partitions)
            .unwrap_or_else(|_| crate::cluster::partition::Partitions::new(12).expect("12"))
    }
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        ScheduleConfig {
            catch_up: CatchUp::One,
            max_catch_up: 100,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{origin}: {message}\n  fix: see README \"Configuration\" for every key and its type")]
    Invalid { origin: String, message: String },
}

/// Keys whose values are tables of free names (`name=value,…` in the environment).
const MAPS: &[&str] = &["functions", "kafka.properties", "kafka.topics"];

impl Config {
    /// Reads `file` (if any), then applies `FLOWBROKER_…` variables from `env`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    file: path.display().to_string(),
                    source,
                })?;
                Config::parse(&text, &path.display().to_string(), env)
            }
            None => Config::parse("", "defaults", env),
        }
    }

    /// [`Config::load`] of a file's text; `origin` names it in errors.
    pub fn parse(
        text: &str,
        origin: &str,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut root: toml::Table = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let origin = origin.to_string();
        let keys = known_keys();
        let mut from_env = false;
        let mut warnings = Vec::new();
        for (name, raw) in env {
            let Some(rest) = name.strip_prefix("FLOWBROKER_") else {
                continue;
            };
            let lower = rest.to_ascii_lowercase();
            let Some(key) = keys.iter().find(|k| k.replace('.', "_") == lower) else {
                // read elsewhere (command line, scripts, tests), not config keys
                let other = ["config", "log", "tansu", "cache", "server"].contains(&lower.as_str())
                    || lower.starts_with("test_")
                    || lower.starts_with("soak_");
                if !other {
                    let known: Vec<String> = keys
                        .iter()
                        .map(|k| format!("FLOWBROKER_{}", k.replace('.', "_").to_uppercase()))
                        .collect();
                    let hint = crate::diag::did_you_mean(&name, known.iter().map(String::as_str));
                    warnings.push(format!(
                        "environment variable {name} is not a flowbroker setting and is ignored{hint}"
                    ));
                }
                continue;
            };
            set(&mut root, key, env_value(key, &raw)).map_err(|message| ConfigError::Invalid {
                origin: format!("{origin} + {name}"),
                message,
            })?;
            from_env = true;
        }
        let origin = if from_env {
            format!("{origin} + FLOWBROKER_* environment")
        } else {
            origin
        };
        let cfg =
            Config::deserialize(toml::Value::Table(root)).map_err(|e| ConfigError::Invalid {
                origin: origin.clone(),
                message: e.to_string(),
            })?;
        cfg.check()
            .map_err(|message| ConfigError::Invalid { origin, message })?;
        Ok(Config { warnings, ..cfg })
    }

    /// Values serde cannot check: durations and the time zone.
    fn check(&self) -> Result<(), String> {
        let durations = [
            ("buffer_ttl", &self.buffer_ttl, false),
            ("dedupe_window", &self.dedupe_window, false),
            ("retention", &self.retention, true),
        ];
        for (name, value, may_be_empty) in durations {
            if value.is_empty() && may_be_empty {
                continue;
            }
            crate::time::Duration::parse(value).map_err(|e| {
                format!(
                    "{name} = {value:?}: {e} (an ISO 8601 duration such as \"PT10M\" or \"P7D\")"
                )
            })?;
        }
        if !self.timezone.is_empty() {
            crate::time::parse_timezone(&self.timezone).map_err(|e| format!("timezone: {e}"))?;
        }
        crate::cluster::partition::Partitions::new(self.cluster.partitions)
            .map_err(|e| format!("cluster.partitions: {e}"))?;
        self.http.check()?;
        if self.history.max_entries == 0 {
            return Err(
                "history.max_entries = 0: an instance keeps at least one entry \
                 (the default is 10000)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The durations, parsed (once per batch, not per event). Calendar units count from `now`.
    /// Values [`Config::load`] would reject fall back to the defaults.
    pub fn windows(&self, now: chrono::DateTime<chrono::Utc>) -> Windows {
        let parse = |s: &str| {
            crate::time::Duration::parse(s)
                .ok()
                .map(|d| d.after(now) - now)
        };
        Windows {
            buffer_ttl: parse(&self.buffer_ttl).unwrap_or_else(|| chrono::Duration::hours(24)),
            dedupe: parse(&self.dedupe_window).unwrap_or_else(|| chrono::Duration::minutes(10)),
            retention: parse(&self.retention),
        }
    }

    /// The store directory.
    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join("store")
    }
}

/// Every settable key path, from the defaults.
fn known_keys() -> Vec<String> {
    let value = toml::Value::try_from(Config::default()).expect("defaults serialize");
    let mut keys = Vec::new();
    fn walk(prefix: &str, v: &toml::Value, keys: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) if !MAPS.contains(&prefix) => {
                for (k, v) in t {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, v, keys);
                }
            }
            _ => keys.push(prefix.to_string()),
        }
    }
    walk("", &value, &mut keys);
    for m in MAPS {
        if !keys.iter().any(|k| k == m) {
            keys.push(m.to_string());
        }
    }
    keys
}

/// Whether the key's default value is a string.
fn default_is_string(key: &str) -> bool {
    let mut v = toml::Value::try_from(Config::default()).expect("defaults serialize");
    for part in key.split('.') {
        match v.get(part) {
            Some(next) => v = next.clone(),
            None => return false,
        }
    }
    v.is_str()
}

/// Reads an environment value as the key's TOML type.
fn env_value(key: &str, raw: &str) -> toml::Value {
    if MAPS.contains(&key) {
        let table = raw
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| {
                (
                    k.trim().to_string(),
                    toml::Value::String(v.trim().to_string()),
                )
            })
            .collect();
        return toml::Value::Table(table);
    }
    if default_is_string(key) {
        // a token or a name that happens to read as a number or a boolean stays as written
        return toml::Value::String(raw.to_string());
    }
    if let Ok(toml::Value::Table(t)) = toml::from_str::<toml::Value>(&format!("v = {raw}")) {
        if let Some(v) = t.get("v") {
            if !key.ends_with("topics") || v.is_array() {
                return v.clone();
            }
        }
    }
    if key.ends_with("topics") {
        return toml::Value::Array(
            raw.split(',')
                .map(|s| toml::Value::String(s.trim().to_string()))
                .filter(|v| v.as_str() != Some(""))
                .collect(),
        );
    }
    toml::Value::String(raw.to_string())
}

/// Puts `value` at the dotted `key`; an error when the file has a non-table where a section
/// belongs (`kafka = 1` with `FLOWBROKER_KAFKA_BROKERS` set).
fn set(root: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), String> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or(key);
    let mut table = root;
    for p in parts {
        table = table
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| format!("{p} must be a table ([{p}]) to hold {key}"))?;
    }
    table.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn defaults_need_no_file() {
        let c = Config::load(None, env(&[])).unwrap();
        assert_eq!(c.kafka.brokers, "127.0.0.1:9092");
        assert_eq!(c.http.listen, "127.0.0.1:8080");
        assert_eq!(c.kafka.input_topics, vec!["flowbroker.in"]);
    }

    #[test]
    fn the_advertised_url_defaults_to_the_listen_address_with_this_hosts_name() {
        let mut h = HttpConfig::default();
        assert_eq!(h.advertised("box"), "http://127.0.0.1:8080");
        h.listen = "0.0.0.0:9000".into();
        assert_eq!(h.advertised("box"), "http://box:9000");
        h.listen = "[::]:9000".into();
        assert_eq!(h.advertised("box"), "http://box:9000");
        h.advertised_url = "http://10.0.0.7:9000/".into();
        assert_eq!(h.advertised("box"), "http://10.0.0.7:9000");
        let c = Config::load(
            None,
            env(&[("FLOWBROKER_HTTP_ADVERTISED_URL", "http://a:1")]),
        )
        .unwrap();
        assert_eq!(c.http.advertised_url, "http://a:1");
    }

    #[test]
    fn env_overrides_every_kind_of_key() {
        let c = Config::load(
            None,
            env(&[
                ("FLOWBROKER_KAFKA_GROUP_ID", "g2"),
                ("FLOWBROKER_KAFKA_INPUT_TOPICS", "a, b"),
                ("FLOWBROKER_KAFKA_FETCH_WAIT_MAX_MS", "10"),
                (
                    "FLOWBROKER_FUNCTIONS",
                    "greet=http://x/greet,other=http://y",
                ),
                ("FLOWBROKER_KAFKA_PROPERTIES", "security.protocol=SASL_SSL"),
                ("FLOWBROKER_SCHEDULES_CATCH_UP", "all"),
                ("FLOWBROKER_STORE_WRITE_BUFFER_MIB", "16"),
                ("FLOWBROKER_STORE_MERGE_TOMBSTONES", "500"),
                ("PATH", "/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(c.kafka.group_id, "g2");
        assert_eq!(c.kafka.input_topics, vec!["a", "b"]);
        assert_eq!(c.kafka.fetch_wait_max_ms, 10);
        assert_eq!(c.functions["greet"], "http://x/greet");
        assert_eq!(c.kafka.properties["security.protocol"], "SASL_SSL");
        assert_eq!(c.schedules.catch_up, CatchUp::All);
        assert_eq!(c.store.memory().write_buffer, 16 << 20);
        assert_eq!(c.store.merge_tombstones, 500);
        assert_eq!(
            c.store.memory().cache,
            crate::store::Memory::default().cache
        );
    }

    #[test]
    fn unknown_file_keys_are_errors_and_unknown_env_vars_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "[kafka]\nbrokerz = \"x\"\n").unwrap();
        let e = Config::load(Some(&f), env(&[])).unwrap_err().to_string();
        assert!(e.contains("brokerz"), "{e}");
        let c = Config::load(None, env(&[("FLOWBROKER_KAFKA_BROKERZ", "x")])).unwrap();
        assert_eq!(c.warnings.len(), 1);
        assert!(
            c.warnings[0].contains("FLOWBROKER_KAFKA_BROKERS"),
            "{:?}",
            c.warnings
        );
        let c = Config::load(None, env(&[("FLOWBROKER_LOG", "debug")])).unwrap();
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn durations_and_zone_are_checked() {
        let e = Config::load(None, env(&[("FLOWBROKER_RETENTION", "7 days")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("retention") && e.contains("P7D"), "{e}");
        let e = Config::load(None, env(&[("FLOWBROKER_TIMEZONE", "Mars/Olympus")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("timezone"), "{e}");
        let c = Config::load(None, env(&[("FLOWBROKER_RETENTION", "")])).unwrap();
        assert_eq!(c.retention, "");
    }

    #[test]
    fn file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(
            &f,
            "data_dir = \"/tmp/x\"\n[kafka]\nbrokers = \"k:1\"\n[functions]\ngreetingFunction = \"http://127.0.0.1:9000/greet\"\n",
        )
        .unwrap();
        let c = Config::load(Some(&f), env(&[("FLOWBROKER_KAFKA_BROKERS", "k:2")])).unwrap();
        assert_eq!(c.kafka.brokers, "k:2");
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(
            c.functions["greetingFunction"],
            "http://127.0.0.1:9000/greet"
        );
    }

    #[test]
    fn an_api_beyond_loopback_needs_a_token_or_an_explicit_insecure() {
        let open = |vars: &[(&str, &str)]| Config::load(None, env(vars));
        let e = open(&[("FLOWBROKER_HTTP_LISTEN", "0.0.0.0:8080")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("http.auth_token") && e.contains("http.insecure = true"),
            "{e}"
        );
        let e = open(&[("FLOWBROKER_HTTP_LISTEN", "broker-1.example:8080")]).unwrap_err();
        assert!(e.to_string().contains("no token"), "{e}");
        for ok in ["127.0.0.1:8080", "[::1]:8080", "localhost:8080", ""] {
            open(&[("FLOWBROKER_HTTP_LISTEN", ok)]).unwrap();
        }
        let c = open(&[
            ("FLOWBROKER_HTTP_LISTEN", "0.0.0.0:8080"),
            ("FLOWBROKER_HTTP_INSECURE", "true"),
        ])
        .unwrap();
        assert_eq!(c.http.token().unwrap(), None);
        // a token that reads as a number stays the string it is
        let c = open(&[
            ("FLOWBROKER_HTTP_LISTEN", "0.0.0.0:8080"),
            ("FLOWBROKER_HTTP_AUTH_TOKEN", "12345"),
        ])
        .unwrap();
        assert_eq!(c.http.token().unwrap().as_deref(), Some("12345"));
    }

    #[test]
    fn the_token_may_come_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "s3cret\n").unwrap();
        let path = f.display().to_string();
        let c = Config::load(
            None,
            env(&[
                ("FLOWBROKER_HTTP_LISTEN", "0.0.0.0:8080"),
                ("FLOWBROKER_HTTP_AUTH_TOKEN_FILE", &path),
            ]),
        )
        .unwrap();
        assert_eq!(c.http.token().unwrap().as_deref(), Some("s3cret"));
        let missing = dir.path().join("nope").display().to_string();
        let e = Config::load(None, env(&[("FLOWBROKER_HTTP_AUTH_TOKEN_FILE", &missing)]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("http.auth_token_file") && e.contains("nope"),
            "{e}"
        );
        std::fs::write(&f, " \n").unwrap();
        let e = Config::load(None, env(&[("FLOWBROKER_HTTP_AUTH_TOKEN_FILE", &path)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is empty"), "{e}");
    }

    #[test]
    fn a_section_that_is_not_a_table_is_an_error_not_a_panic() {
        let e = Config::parse(
            "kafka = 1",
            "c.toml",
            env(&[("FLOWBROKER_KAFKA_BROKERS", "k:1")]),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("kafka must be a table"), "{e}");
    }
}
