//! `flowbroker run`: builds the running broker from its [`Config`] and wires the pieces:
//!
//! ```text
//! Kafka consumer ─┐                      ┌─> producer task ─> Kafka (events, lifecycle, DLQ)
//! HTTP ingress ───┤                      │
//! admin API ──────┼─> core (one writer) ─┼─> invoker tasks ─> HTTP functions ─┐
//! definitions ───┤   batch -> 1 txn     │                                    │
//! fn results ─────┘   timers, schedules  └─> replies, offset commits          │
//!        ^────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! The core runs on a thread of its own (store commits fsync); everything else is async.

use crate::broker::core::{Core, Outlets, Shared};
use crate::broker::{Cmd, SystemClock};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Kafka(#[from] crate::kafka::KafkaError),
    #[error("cannot listen on {addr} (http.listen): {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Token(String),
    #[error("the core stopped: {0}")]
    Core(String),
    #[error("cannot start the {what} thread: {source}")]
    Thread {
        what: &'static str,
        source: std::io::Error,
    },
    #[error(transparent)]
    CoreFailed(#[from] crate::broker::core::CoreError),
    #[error(transparent)]
    Otel(#[from] crate::otel::OtelError),
    #[error("scanning the workflows directory {0} failed (a bug: the log has the panic)")]
    Scan(std::path::PathBuf),
}

/// The first scan of the workflows directory. A scan that panicked stops the start: an empty
/// set would read as every file deleted.
async fn first_scan(
    watch: crate::watch::Watch,
) -> Result<(crate::watch::Watch, crate::watch::Files), ServeError> {
    let dir = watch.dir().to_path_buf();
    match watch.scan_async().await {
        (watch, Some(files)) => Ok((watch, files)),
        (_, None) => Err(ServeError::Scan(dir)),
    }
}

/// The workflow files deployed at start, and what goes on following them.
struct Deployed {
    watch: crate::watch::Watch,
    files: crate::watch::Files,
    /// With a definitions topic: its reader and this broker's part in the rollout.
    definitions: Option<(crate::kafka::definitions::Reader, crate::rollout::Rollout)>,
}

/// Deploys this broker's own files, and (with a definitions topic) every other broker's,
/// read to the topic's end, before anything is consumed. The cluster's files go first: an
/// invalid local edit then keeps their version deployed.
async fn deploy(
    cfg: &Config,
    owner: &str,
    metrics: &Metrics,
    producer: &crate::kafka::sender::Sender,
    core: &mut Core,
) -> Result<Deployed, ServeError> {
    let topic = &cfg.cluster.definitions_topic;
    let watch = crate::watch::Watch::new(cfg.workflows_dir.clone());
    if topic.is_empty() {
        let (watch, files) = first_scan(watch).await?;
        core.process(vec![Cmd::Files(files.clone())])?;
        return Ok(Deployed {
            watch,
            files,
            definitions: None,
        });
    }
    let mut reader =
        crate::kafka::definitions::reader(&cfg.kafka, topic, metrics.definitions_wait.clone())?;
    let mut rollout = crate::rollout::Rollout::new(cfg.workflows_dir.clone(), owner.to_string());
    reader
        .read_to_end(&mut rollout, Duration::from_secs(15))
        .await;
    // this broker's files as they are once the cluster's are known
    let (watch, scanned) = first_scan(watch).await?;
    rollout.start(
        crate::rollout::local_files(&watch, scanned),
        chrono::Utc::now(),
    );
    crate::kafka::definitions::publish(producer, topic, &mut rollout).await;
    let (cluster, files) = (rollout.cluster_files(), rollout.files());
    core.process(vec![Cmd::Files(cluster), Cmd::Files(files.clone())])?;
    Ok(Deployed {
        watch,
        files,
        definitions: Some((reader, rollout)),
    })
}

/// Runs the broker until SIGINT/SIGTERM or a fatal error.
pub async fn serve(cfg: Config) -> Result<(), ServeError> {
    // span export, when the OTEL_* environment asks for it (checked first: a collector the
    // operator asked for is never silently missing)
    let spans = crate::otel::Exporter::from_env()?;
    if spans.is_some() {
        tracing::info!("exporting spans over OTLP (OTEL_EXPORTER_OTLP_* settings)");
    }
    let r = run(cfg, spans.clone()).await;
    if let Some(s) = spans {
        // the SDK's exporter blocks while it sends what is queued
        let _ = tokio::task::spawn_blocking(move || s.shutdown()).await;
    }
    r
}

async fn run(mut cfg: Config, spans: Option<crate::otel::Exporter>) -> Result<(), ServeError> {
    crate::kafka::topics::prepare(&mut cfg).await;
    let cfg = Arc::new(cfg);
    let store = Arc::new(Store::open_with(&cfg.store_path(), cfg.store.memory())?);
    // deleted keys' tombstones are dropped as they pile up (docs/store.md "Costs we accept")
    crate::store::spawn_compactor(&store, cfg.store.merge_tombstones).map_err(|source| {
        ServeError::Thread {
            what: "store-compact",
            source,
        }
    })?;
    let metrics = Arc::new(Metrics::new());
    let shared = Arc::new(Shared::default());
    let k = &cfg.kafka;
    let host = host_name();
    let owner = format!(
        "{host}-{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let url = cfg.http.advertised(&host);
    let node = crate::broker::resume::node_id(&store)?;
    tracing::info!(brokers = %k.brokers, group = %k.group_id, topics = ?k.input_topics,
        partitions = cfg.cluster.partitions, broker = %owner, node = %node, advertised = %url,
        data = %cfg.store_path().display(), workflows = %cfg.workflows_dir.display(), "starting flowbroker");
    let (producer, reports) = crate::kafka::sender::Sender::create(k)?;
    let (control_tx, control_rx) = mpsc::unbounded_channel::<Cmd>();
    // backpressure: the core says when intake must pause (too much handed to the producer and
    // the invoker and not heard back about); both consumers follow it
    let (intake_tx, intake_rx) = tokio::sync::watch::channel(false);
    let (consumer, assigned_inputs) = crate::kafka::consumer::create(
        k,
        &node,
        control_tx.clone(),
        metrics.clone(),
        intake_rx.clone(),
    )?;
    let (state_consumer, assigned_state) =
        crate::kafka::membership::create(k, &node, &cfg.cluster.work_topic, control_tx.clone())?;
    let assigned = crate::broker::shared::Assigned {
        inputs: assigned_inputs,
        state: assigned_state,
    };
    let log = crate::kafka::log::KafkaLog::new(&cfg, owner.clone())?;
    crate::kafka::owners::tail(k, &cfg.cluster.owners_topic, shared.clone())?;
    let work_reader = crate::kafka::work::create(&cfg)?;
    crate::kafka::standby::start(&cfg, node.clone(), store.clone(), shared.clone())?;

    let (cmd_tx, cmd_rx) = mpsc::channel::<Cmd>(64);
    // the work topic's records never queue behind input records (input records held for a
    // partition owned here wait for them: `broker::held`), and requests and call results never
    // wait while input does
    let (work_tx, work_rx) = mpsc::channel::<Cmd>(64);
    let (inputs_tx, inputs_rx) = mpsc::channel::<Cmd>(64);
    let (prod_tx, prod_rx) = mpsc::unbounded_channel();
    let (inv_tx, inv_rx) = mpsc::unbounded_channel();
    let (reader_tx, reader_rx) = mpsc::unbounded_channel();
    let commits = crate::kafka::commits::Commits::start(
        consumer.clone(),
        Duration::from_millis(k.commit_interval_ms),
        metrics.clone(),
    )
    .map_err(|source| ServeError::Thread {
        what: "offset commit",
        source,
    })?;
    let mut core = Core::new(
        store.clone(),
        cfg.clone(),
        metrics.clone(),
        Arc::new(SystemClock),
        Outlets {
            produce: prod_tx,
            invoke: inv_tx,
            commit_offsets: commits.outlet(),
            spans: spans.clone(),
            intake: intake_tx,
        },
        shared.clone(),
    )?;
    core.attach(Box::new(log), reader_tx);
    core.attach_snapshots(Box::new(crate::kafka::snapshots::start(
        &cfg,
        owner.clone(),
        shared.clone(),
    )?));
    let Deployed {
        watch,
        files,
        definitions,
    } = deploy(&cfg, &owner, &metrics, &producer, &mut core).await?;
    if files.is_empty() {
        tracing::warn!(dir = %cfg.workflows_dir.display(), "no workflow files found; add *.yaml or *.json files there");
    }
    let caught = definitions.as_ref().map(|(r, _)| r.caught.clone());

    tokio::spawn(crate::kafka::producer::run(
        producer.clone(),
        reports,
        crate::kafka::producer::Topics {
            work: cfg.cluster.work_topic.clone(),
            dead_letter: k.dlq_topic.clone(),
        },
        prod_rx,
        // acknowledgements never queue behind intake batches (they are what lets intake resume)
        control_tx.clone(),
    ));
    tokio::spawn(crate::kafka::owners::publish(
        producer.clone(),
        cfg.cluster.owners_topic.clone(),
        shared.clone(),
        owner.clone(),
        url.clone(),
        node.clone(),
    ));
    tokio::spawn(crate::kafka::work::run(
        work_reader,
        cfg.cluster.work_topic.clone(),
        reader_rx,
        work_tx,
        k.batch_size,
        intake_rx.clone(),
        caught.clone(),
    ));
    tokio::spawn(crate::invoke::run(
        inv_rx,
        cmd_tx.clone(),
        metrics.clone(),
        Duration::from_millis(cfg.invoke.timeout_ms),
        cfg.invoke.concurrency,
        spans,
    ));
    if cfg.cluster.resume_on_restart {
        tokio::spawn(
            crate::kafka::resume::Resume {
                cfg: cfg.clone(),
                node: node.clone(),
                inputs: crate::broker::resume::remembered_inputs(&store)?,
                shared: shared.clone(),
                control: control_tx.clone(),
                core: inputs_tx.clone(),
                assigned: assigned.clone(),
                metrics: metrics.clone(),
                intake: intake_rx.clone(),
                definitions: caught.clone(),
            }
            .run(),
        );
    }
    tokio::spawn(crate::kafka::membership::run(state_consumer.clone()));
    tokio::spawn(crate::kafka::consumer::run(
        consumer.clone(),
        inputs_tx,
        k.batch_size,
        k.max_input_bytes,
        intake_rx,
        caught,
    ));
    let every = Duration::from_millis(cfg.watch_interval_ms);
    match definitions {
        Some((reader, rollout)) => tokio::spawn(crate::kafka::definitions::run(
            reader,
            rollout,
            producer.clone(),
            watch,
            every,
            files,
            control_tx.clone(),
        )),
        None => tokio::spawn(crate::watch::run(watch, every, files, cmd_tx.clone())),
    };
    listen(&cfg, |authorization| {
        Ok(crate::http::AppState {
            core: cmd_tx.clone(),
            store: store.clone(),
            metrics: metrics.clone(),
            shared: shared.clone(),
            assigned,
            peers: crate::http::Peers::new(owner.clone(), cfg.cluster.parts(), authorization),
            work_end: Some(crate::kafka::work::ends(k, &cfg.cluster.work_topic)?),
            last_scrape: Default::default(),
        })
    })
    .await?;
    drop(cmd_tx);

    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("flowbroker-core".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("core runtime");
            let r = rt.block_on(core.run(crate::broker::core::Queues {
                cmds: cmd_rx,
                control: control_rx,
                work: work_rx,
                inputs: inputs_rx,
            }));
            let _ = done_tx.send(r);
        })
        .expect("core thread");

    tokio::select! {
        r = done_rx => match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(ServeError::Core(e.to_string())),
            Err(_) => Err(ServeError::Core("the core thread panicked".into())),
        },
        _ = shutdown_signal() => {
            let leave = cfg.kafka.leave_group_on_stop;
            if leave {
                tracing::info!("shutting down: leaving the group (partitions move at once), flushing the producer (anything unsent is re-sent by the next owner)");
            } else {
                tracing::info!(session_timeout_ms = cfg.kafka.session_timeout_ms, "shutting down: the group reassigns this broker's partitions after the session timeout (kafka.leave_group_on_stop = false), flushing the producer (anything unsent is re-sent by the next owner)");
            }
            let stopping = Stopping {
                control: control_tx,
                commits,
                consumer,
                state_consumer,
                producer,
            };
            let all = cfg.cluster.parts().all().collect();
            let _ = tokio::task::spawn_blocking(move || stopping.stop(all, leave)).await;
            Ok(())
        }
    }
}

/// Serves the HTTP API on `http.listen`, on a task of its own (nothing when it is empty).
/// `state` is what the handlers share, given how this broker authorizes itself to its
/// peers (its own token).
async fn listen(
    cfg: &Config,
    state: impl FnOnce(Option<String>) -> Result<crate::http::AppState, ServeError>,
) -> Result<(), ServeError> {
    if cfg.http.listen.is_empty() {
        return Ok(());
    }
    let listener = tokio::net::TcpListener::bind(&cfg.http.listen)
        .await
        .map_err(|source| ServeError::Listen {
            addr: cfg.http.listen.clone(),
            source,
        })?;
    let token = cfg.http.token().map_err(ServeError::Token)?;
    tracing::info!(addr = %cfg.http.listen, token = token.is_some(), "http listening");
    let gate =
        crate::http::auth::Gate::new(token, cfg.http.max_body_bytes).with_aws(cfg.http.aws_key());
    let app = crate::http::router(state(gate.authorization())?, gate);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "http server stopped");
        }
    });
    Ok(())
}

/// What a stop on a signal closes, in order ([`Stopping::stop`]).
struct Stopping {
    control: mpsc::UnboundedSender<Cmd>,
    commits: crate::kafka::commits::Commits,
    consumer: Arc<crate::kafka::consumer::KafkaConsumer>,
    state_consumer: Arc<crate::kafka::membership::StateConsumer>,
    producer: crate::kafka::sender::Sender,
}

impl Stopping {
    /// Stops writing first (the core lets go of `all` partitions), commits what the last
    /// rounds landed, then leaves the groups (`leave`: kafka.leave_group_on_stop) or not, and
    /// flushes the producer. Blocks.
    fn stop(self, all: Vec<crate::cluster::partition::PartitionId>, leave: bool) {
        use rdkafka::consumer::Consumer;
        let Stopping {
            control,
            commits,
            consumer,
            state_consumer,
            producer,
        } = self;
        // stop writing first, then leave: the next owners fence and restore
        let (done, stopped) = std::sync::mpsc::sync_channel(1);
        if control.send(Cmd::Revoked(all, Some(done))).is_ok() {
            let _ = stopped.recv_timeout(Duration::from_secs(30));
        }
        // what the last rounds landed, before the group moves the partitions
        commits.flush(Duration::from_secs(5));
        if leave {
            // librdkafka revokes the assignment, then sends LeaveGroup from its own
            // thread: wait for the revocations so the leaves are on their way before
            // exit
            consumer.unsubscribe();
            state_consumer.unsubscribe();
            let end = std::time::Instant::now() + Duration::from_secs(5);
            while (consumer.assignment().is_ok_and(|a| a.count() > 0)
                || state_consumer.assignment().is_ok_and(|a| a.count() > 0))
                && std::time::Instant::now() < end
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            drop(consumer);
            drop(state_consumer);
        } else {
            // no LeaveGroup: the consumers are never closed (closing one leaves its
            // group); the process ends with them, as after a crash
            std::mem::forget(consumer);
            std::mem::forget(state_consumer);
        }
        let _ = producer.flush(Duration::from_secs(5));
    }
}

/// This machine's name: `HOSTNAME`, else the kernel's, else `localhost`.
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("signal");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
