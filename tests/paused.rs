//! A frozen owner (docs/scale.md "Fencing"): a broker stopped with SIGSTOP in the middle of a
//! stream (a long GC pause, a stalled VM) loses its partitions to another broker while it is
//! frozen. When it is let go on (SIGCONT), whatever it had appended before the freeze must not
//! leave it: the new owner restores those batches and sends their effects. So after the
//! resume, nothing the frozen broker lets out reaches Kafka. (A record it let out to its
//! producer just before the freeze may reach Kafka after the resume: a duplicate of what the
//! new owner re-sent, under the same id, stamped with the time it was let out.)

mod support;
use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};
use support::*;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The time of a log line (`2026-11-25T09:52:15.574359Z  INFO ...`), ms since the epoch.
fn log_time_ms(line: &str) -> Option<i64> {
    let t = line.split_whitespace().next()?;
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// A pong seen on the output topic.
struct Pong {
    id: String,
    /// The broker that built it (its configured event source).
    source: String,
    /// Its Kafka timestamp: when a broker's core let it out to its producer, after its batch
    /// landed (`broker::LetOut`). A record let out just before a SIGSTOP reaches Kafka after
    /// the SIGCONT, with the time before the freeze.
    at: i64,
}

fn pongs(out: &Collector) -> Vec<Pong> {
    out.all()
        .into_iter()
        .filter_map(|r| {
            let e = r.event.filter(|e| e.event_type == "bench.pong")?;
            Some(Pong {
                id: e.id,
                source: e.source,
                at: r.timestamp_ms.unwrap_or(0),
            })
        })
        .collect()
}

fn distinct(p: &[Pong]) -> usize {
    p.iter().map(|p| &p.id).collect::<BTreeSet<_>>().len()
}

#[test]
fn a_sigstopped_owner_resumed_after_its_partitions_moved_sends_nothing() {
    const N: usize = 3000;
    let kafka = Kafka::start();
    let out = kafka.collect(&["flowbroker.out"]);
    // each broker signs what it produces, so the test can tell who sent a record
    let env = |name: &'static str| {
        [
            ("FLOWBROKER_CLUSTER_PARTITIONS", "4"),
            ("FLOWBROKER_EVENT_SOURCE", name),
        ]
    };
    let a = Broker::start(&kafka, &[("echo.yaml", ECHO)], &env("/a/{workflowId}"));
    wait_for(60, "a to own every partition", || {
        (a.owned().len() == 4).then_some(())
    });

    // a steady stream (about 1,000/s for 3 s); a freezes while it applies it
    let p = kafka.producer();
    let stream = std::thread::spawn(move || {
        p.send_pings(
            "f",
            N,
            Some(std::time::Duration::from_millis(1)),
            |i| serde_json::json!({"i": i}),
        );
    });
    wait_for(60, "a to complete part of the stream", || {
        (distinct(&pongs(&out)) >= N / 6).then_some(())
    });
    // freeze it right after it shows committed effects not yet acknowledged by Kafka
    let pending = wait_for(60, "a to hold effects not acknowledged yet", || {
        let n = metric_sum(&a.metrics(), "flowbroker_outbox_pending", "");
        (n > 0).then_some(n)
    });
    a.freeze(true);
    let frozen = now_ms();
    let done_at_freeze = distinct(&pongs(&out));
    assert!(
        (done_at_freeze as i64) < N as i64,
        "the freeze came before the stream was done ({done_at_freeze} of {N})"
    );

    // b takes every partition over once a's session times out, and finishes the stream
    let b = Broker::start(&kafka, &[("echo.yaml", ECHO)], &env("/b/{workflowId}"));
    wait_for(90, "b to own every partition", || {
        (b.owned().len() == 4).then_some(())
    });
    stream.join().unwrap();
    wait_for(90, "every event's pong", || {
        (distinct(&pongs(&out)) == N).then_some(())
    });

    // a goes on: it must notice the newer fences and let go without sending anything. It
    // then rejoins the group and may take partitions back, with fences of its own: from then
    // on it sends legitimately (its own new work, or an outbox it restored)
    let resumed = now_ms();
    a.freeze(false);
    let more = kafka.producer();
    more.send_pings("g", 50, None, |i| serde_json::json!({"i": i}));
    wait_for(60, "the pongs of events sent after the resume", || {
        (distinct(&pongs(&out)) == N + 50).then_some(())
    });
    let log = a.log();
    let retaken = log
        .lines()
        .filter(|l| l.contains("state partition taken over"))
        .filter_map(log_time_ms)
        .find(|t| *t >= resumed)
        .unwrap_or(i64::MAX);

    for l in log
        .lines()
        .filter(|l| log_time_ms(l).is_some_and(|t| t >= resumed))
    {
        if ["paused", "void", "released", "revoked", "taken over"]
            .iter()
            .any(|w| l.contains(w))
        {
            eprintln!("a after the resume: {l}");
        }
    }
    // what a let out after the resume, before it took a partition back, is a zombie's: a
    // round built after the resume, or one appended before the freeze whose effects were let
    // out after it though a newer fence came in between
    let all = pongs(&out);
    let by_a = |p: &&Pong| p.source.starts_with("/a/");
    let stale: Vec<_> = all
        .iter()
        .filter(by_a)
        .filter(|p| p.at >= resumed && p.at < retaken)
        .map(|p| (&p.id, p.at))
        .collect();
    assert!(
        stale.is_empty(),
        "the frozen broker let {} pongs out after it resumed and before it took a partition \
         back, e.g. {:?}\n{log}",
        stale.len(),
        stale.first(),
    );
    // the freeze hit mid-flight: a held effects it had committed and not yet sent (b sent
    // them, restored from the changelog, under a's event ids and source), and b produced the
    // rest of the stream
    let resent = all
        .iter()
        .filter(by_a)
        .filter(|p| p.at >= frozen && p.at < resumed)
        .count();
    let by_b = all.iter().filter(|p| p.source.starts_with("/b/")).count();
    eprintln!(
        "a held {pending} effects not acknowledged just before it froze; {done_at_freeze} pongs \
         were out at the freeze; b re-sent {resent} of a's and built {by_b}; {} records for {} \
         events",
        all.len(),
        N + 50
    );
    assert!(by_b > 0, "b produced part of the stream");
    assert!(
        resent > 0,
        "the freeze left committed effects unsent ({pending} pending just before it): b must \
         have re-sent some of a's"
    );
    // whatever a appended but held back, b sent: every event has its pong, each id once or
    // re-sent with the same id
    assert_eq!(distinct(&all), N + 50);
}
