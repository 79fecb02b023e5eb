//! Invalid definitions are rejected with every problem located: file, JSON path and the fix.

use flowbroker::definition::Definition;
use flowbroker::load::Format;

const GOOD: &str = r#"
id: order
name: Order
events:
- {name: OrderPlaced, type: order.placed, source: shop, correlation: [{contextAttributeName: orderid}]}
- {name: OrderShipped, type: order.shipped, kind: produced}
functions:
- {name: reserve, resource: "http://stock/reserve"}
states:
- name: Receive
  type: event
  start: {kind: default}
  eventsActions:
  - eventRefs: [OrderPlaced]
    actions: [{functionRef: {refName: reserve, parameters: {id: "{{ $.orderid }}"}}, timeout: PT1M}]
  transition: {nextState: Route}
- name: Route
  type: switch
  dataConditions:
  - {condition: "{{ $.[?(@.express == true)] }}", transition: {nextState: Ship}}
  default: {nextState: Wait}
- name: Wait
  type: delay
  timeDelay: PT1H
  transition: {nextState: Ship}
- name: Ship
  type: inject
  data: {shipped: true}
  end:
    kind: event
    produceEvent: {eventRef: OrderShipped, data: "{{ $.orderid }}"}
"#;

fn errors_of(text: &str) -> Vec<String> {
    match Definition::parse("workflows/order.yaml", text, Format::Yaml) {
        Ok(_) => vec![],
        Err(e) => e
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.to_string())
            .collect(),
    }
}

#[test]
fn the_base_definition_is_valid() {
    assert_eq!(errors_of(GOOD), Vec::<String>::new());
}

/// (what is changed, replacement, expected `file: path: message` prefix, a word of the fix)
const MISTAKES: &[(&str, &str, &str, &str)] = &[
    ("nextState: Ship}", "nextState: Shipp}", "workflows/order.yaml: $.states[1].dataConditions[0].transition.nextState: no state named \"Shipp\" (did you mean \"Ship\"?)", "Ship"),
    ("eventRefs: [OrderPlaced]", "eventRefs: [OrderPlacd]", "$.states[0].eventsActions[0].eventRefs[0]: no event named \"OrderPlacd\"", "did you mean"),
    ("refName: reserve", "refName: reserv", "$.states[0].eventsActions[0].actions[0].functionRef.refName: no function named \"reserv\"", "did you mean"),
    ("  start: {kind: default}\n", "", "$.states: no start state", "start: {kind: default}"),
    ("  type: delay\n", "  type: delay\n  start: {kind: default}\n", "$.states[2].start: a second start state", "exactly one"),
    ("contextAttributeName: orderid}", "contextAttributeName: Data}", "$.events[0].correlation[0].contextAttributeName: `Data` is the event's payload, not a context attribute", "eventDataFilter"),
    ("type: order.placed, source: shop,", "type: order.placed,", "$.events[0].source: consumed event \"OrderPlaced\" has no `source`", "add"),
    ("  default: {nextState: Wait}\n", "  default: {nextState: Wait}\n  end: {kind: default}\n", "$.states[1].end: a switch state cannot be an end state", "route"),
    ("  dataConditions:\n  - {condition: \"{{ $.[?(@.express == true)] }}\", transition: {nextState: Ship}}\n", "", "$.states[1]: a switch state needs `dataConditions` or `eventConditions`", "needs"),
    ("  dataConditions:\n  - {condition: \"{{ $.[?(@.express == true)] }}\", transition: {nextState: Ship}}\n", "  eventConditions:\n  - {eventRef: OrderPlaced, transition: {nextState: Ship}}\n", "$.states[1].eventTimeout: `eventConditions` need an `eventTimeout`", "PT15M"),
    ("timeDelay: PT1H", "timeDelay: 1 hour", "$.states[2].timeDelay: \"1 hour\" is not an ISO 8601 duration", "PT15M"),
    ("timeout: PT1M", "timeout: PT1X", "$.states[0].eventsActions[0].actions[0].timeout: \"PT1X\" is not an ISO 8601 duration", "P2DT3H4M"),
    ("condition: \"{{ $.[?(@.express == true)] }}\"", "condition: \"{{ $.[?(@.express == }}\"", "$.states[1].dataConditions[0].condition: `$.[?(@.express ==` is not a valid JsonPath", "start with `$`"),
    ("id: \"{{ $.orderid }}\"", "id: \"{{ $.orderid \"", "$.states[0].eventsActions[0].actions[0].functionRef.parameters.id: unclosed `{{`", "close it"),
    ("  transition: {nextState: Ship}\n- name: Ship", "- name: Ship", "$.states[2].transition: state \"Wait\" has no `transition` and no `end`", "end: {kind: default}"),
    ("  type: delay\n", "  type: dealy\n", "$.states[2].type: unknown state type \"dealy\" (did you mean \"delay\"?)", "use one of"),
    ("- name: Wait\n", "- name: Ship\n", "$.states[3].name: duplicate name \"Ship\"", "unique"),
    ("data: \"{{ $.orderid }}\"}", "data: \"{{ $.orderid }}\", eventRef2: x}", "", ""),
    ("eventRef: OrderShipped,", "eventRef: OrderPlaced,", "$.states[3].end.produceEvent.eventRef: event \"OrderPlaced\" is consumed, but this reference needs a produced event", "kind: produced"),
    ("    kind: event\n    produceEvent: {eventRef: OrderShipped, data: \"{{ $.orderid }}\"}\n", "    kind: event\n", "$.states[3].end.produceEvent: an end of `kind: event` needs `produceEvent`", "naming"),
    ("  start: {kind: default}\n", "  start: {kind: scheduled, schedule: {cron: \"61 * * * *\", directInvoke: allow}}\n", "$.states[0].start.schedule.cron: \"61 * * * *\" is not a cron expression", "0 0/15 * * * ?"),
    ("  start: {kind: default}\n", "  start: {kind: scheduled, schedule: {cron: \"0 * * * *\", timezone: Mars/Olympus, directInvoke: allow}}\n", "$.states[0].start.schedule.timezone: \"Mars/Olympus\" is not an IANA time zone name", "Europe/Berlin"),
    ("  start: {kind: default}\n", "  start: {kind: scheduled, schedule: {interval: \"2021-01-01T00:00:00Z/2020-01-01T00:00:00Z\", directInvoke: allow}}\n", "$.states[0].start.schedule.interval: \"2021-01-01T00:00:00Z/2020-01-01T00:00:00Z\" is not an ISO 8601 time interval: the end is not after the start", "P1Y2M"),
    ("  start: {kind: default}\n", "  start: {kind: scheduled}\n", "$.states[0].start.schedule: a scheduled start needs a `schedule`", "cron"),
    ("    actions: [{functionRef: {refName: reserve, parameters: {id: \"{{ $.orderid }}\"}}, timeout: PT1M}]\n", "    actions: [{timeout: PT1M}]\n", "$.states[0].eventsActions[0].actions[0]: an action needs a `functionRef`", "eventRef"),
    ("  type: delay\n  timeDelay: PT1H\n", "  type: delay\n", "$.states[2]: required field `timeDelay` is missing: add it", "add it"),
    ("  type: delay\n", "  type: delay\n  retry: [{expression: \"{{ $.error }}\", interval: R/x}]\n", "$.states[2].retry[0].interval:", "R5/PT15M"),
    ("id: order\n", "id: \"\"\n", "$.id: the workflow `id` is empty", "unique id"),
    ("functions:\n", "functions:\n- {name: reserve, resource: \"http://other\"}\n", "$.functions[1].name: duplicate name \"reserve\"", "unique"),
    ("{eventRef: OrderShipped, data: \"{{ $.orderid }}\"}", "{eventRef: OrderShipped, data: \"{{ $.orderid }}\", contextAttributes: {\"order-id\": x}}", "$.states[3].end.produceEvent.contextAttributes.order-id: \"order-id\" is not a CloudEvents attribute name", "lowercase"),
    ("  type: inject\n  data: {shipped: true}\n", "  type: parallel\n  completionType: n_of_m\n  branches: [{name: a, workflowId: x}]\n", "$.states[3].n: `completionType: n_of_m` needs `n`", "number of branches"),
    ("  type: inject\n  data: {shipped: true}\n", "  type: foreach\n  inputCollection: \"{{ $.items }}\"\n  iterationParam: item\n  outputCollection: \"{{ $.items[0] }}\"\n  workflowId: w\n", "$.states[3].outputCollection: \"{{ $.items[0] }}\" must be a plain member path", "results are written there"),
    ("  type: delay\n  timeDelay: PT1H\n", "  type: delay\n  timeDelay: [1]\n", "$.states[2].timeDelay: invalid type: sequence, expected a string", ""),
];

#[test]
fn at_least_twenty_distinct_mistakes_are_located() {
    let mut checked = 0;
    for (from, to, expected, fix) in MISTAKES {
        assert!(GOOD.contains(from), "fixture text not found: {from}");
        let text = GOOD.replacen(from, to, 1);
        let errors = errors_of(&text);
        if expected.is_empty() {
            // An unknown field is a warning, never an error.
            assert!(errors.is_empty(), "{errors:#?}");
            continue;
        }
        let hit = errors.iter().find(|e| e.contains(expected));
        let hit =
            hit.unwrap_or_else(|| panic!("expected {expected:?} for {to:?}, got {errors:#?}"));
        assert!(hit.starts_with("workflows/order.yaml: $"), "{hit}");
        assert!(hit.contains(fix), "{hit} lacks the fix {fix:?}");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} mistakes checked");
}

#[test]
fn every_problem_is_listed_at_once() {
    let text = GOOD
        .replacen("nextState: Ship}", "nextState: Shipp}", 1)
        .replacen("timeDelay: PT1H", "timeDelay: soon", 1)
        .replacen("refName: reserve", "refName: nope", 1);
    assert_eq!(errors_of(&text).len(), 3, "{:#?}", errors_of(&text));
    // Deserialization errors in several states are all reported too.
    let text = GOOD
        .replacen("  type: delay\n  timeDelay: PT1H\n", "  type: delay\n", 1)
        .replacen("  type: inject\n", "  type: injekt\n", 1);
    assert_eq!(errors_of(&text).len(), 2, "{:#?}", errors_of(&text));
}

#[test]
fn syntax_errors_carry_line_and_column() {
    let err = Definition::parse("w.yaml", "id: x\nname: [unclosed\n", Format::Yaml).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(d.line.is_some() && d.column.is_some(), "{d}");
    assert!(d.to_string().starts_with("w.yaml:"), "{d}");
    let err =
        Definition::parse("w.json", "{\"id\": \"x\",\n \"name\": }", Format::Json).unwrap_err();
    assert_eq!(err.diagnostics[0].line, Some(2));
}

#[test]
fn lenient_forms_warn_instead_of_failing() {
    let text = GOOD
        .replace(
            "id: order\n",
            "id: order\nversion: 1.0\nstartsAt: Receive\n",
        )
        .replace(
            "{name: OrderShipped, type: order.shipped, kind: produced}",
            "{name: OrderShipped, kind: produced}",
        )
        .replace(
            "type: order.placed, source: shop,",
            "type: order.placed, source: shop, metadata: {bufferTtl: 10min},",
        );
    let def = Definition::parse("w.yaml", &text, Format::Yaml).unwrap();
    assert_eq!(def.workflow.version.as_ref().unwrap().0, "1.0");
    let warned: Vec<&str> = def.warnings.iter().map(|d| d.path.as_str()).collect();
    assert!(warned.contains(&"$.startsAt"), "{warned:?}");
    assert!(warned.contains(&"$.events[1].type"), "{warned:?}");
    // a buffer TTL that is not a duration: the broker's applies (stored versions keep running)
    assert!(
        warned.contains(&"$.events[0].metadata.bufferTtl"),
        "{warned:?}"
    );
    assert_eq!(def.workflow.events[0].buffer_ttl, None);
    assert_eq!(def.workflow.events[1].ce_type(), "OrderShipped");
}

/// Durations a definition writes are parsed once, as it is read: the broker reads the
/// values, never the text again.
#[test]
fn a_buffer_ttl_and_a_schedule_interval_are_parsed_at_load() {
    let text = GOOD.replace(
        "type: order.placed, source: shop,",
        "type: order.placed, source: shop, metadata: {bufferTtl: PT90M},",
    );
    let def = Definition::parse("w.yaml", &text, Format::Yaml).unwrap();
    assert_eq!(
        def.workflow.events[0].buffer_ttl,
        Some(flowbroker::time::Duration::parse("PT1H30M").unwrap())
    );
    let scheduled = r#"
id: windowed
name: windowed
states:
- name: Go
  type: inject
  start: {kind: scheduled, schedule: {interval: "2026-01-01T00:00:00Z/PT2H", directInvoke: allow}}
  end: {kind: default}
"#;
    let def = Definition::parse("s.yaml", scheduled, Format::Yaml).unwrap();
    let start = def.workflow.start_state().unwrap().common().start.unwrap();
    let interval = start.schedule.as_ref().unwrap().interval.as_ref().unwrap();
    assert_eq!(interval.text(), "2026-01-01T00:00:00Z/PT2H");
    let from = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap();
    assert_eq!(
        interval.get(),
        Some(flowbroker::time::TimeInterval::StartDuration(
            from.with_timezone(&chrono::Utc),
            flowbroker::time::Duration::parse("PT2H").unwrap()
        ))
    );
    let bad = scheduled.replace("/PT2H", "/2H");
    let errors = Definition::parse("s.yaml", &bad, Format::Yaml).unwrap_err();
    assert!(
        errors
            .diagnostics
            .iter()
            .any(|d| d.path == "$.states[0].start.schedule.interval"),
        "{:?}",
        errors.diagnostics
    );
}

/// A cron start on an event state: the ticks carry the event's own `source`, `type`,
/// `specversion` and a fresh `id`, so a rule fixing one of them to another value matches no
/// tick, which is warned at the rule's value; a value the ticks carry, or a rule on an
/// attribute the tick sets, is not.
#[test]
fn a_cron_start_whose_correlation_no_tick_can_match_is_warned() {
    let wf = |rules: &str| {
        format!(
            r#"
id: ticking
name: ticking
events:
- {{name: Tick, type: clock.tick, source: /clock, correlation: [{rules}]}}
states:
- name: Wait
  type: event
  start: {{kind: scheduled, schedule: {{cron: "*/5 * * * *", directInvoke: allow}}}}
  eventsActions: [{{eventRefs: [Tick]}}]
  end: {{kind: default}}
"#
        )
    };
    let warned = |rules: &str| -> Vec<(String, String)> {
        let def = Definition::parse("t.yaml", &wf(rules), Format::Yaml).unwrap();
        def.warnings
            .iter()
            .filter(|d| d.path.contains(".correlation["))
            .map(|d| (d.path.clone(), d.message.clone()))
            .collect()
    };
    let path = "$.events[0].correlation[0].contextAttributeValue";
    for rule in [
        "{contextAttributeName: type, contextAttributeValue: other.type}",
        "{contextAttributeName: Source, contextAttributeValue: /elsewhere}",
        "{contextAttributeName: specversion, contextAttributeValue: '0.3'}",
        "{contextAttributeName: id, contextAttributeValue: fixed}",
    ] {
        let w = warned(rule);
        assert_eq!(w.len(), 1, "{rule}: {w:?}");
        assert_eq!(w[0].0, path, "{rule}");
        assert!(w[0].1.contains("matches no tick"), "{rule}: {}", w[0].1);
    }
    for rule in [
        "{contextAttributeName: type, contextAttributeValue: clock.tick}",
        "{contextAttributeName: source, contextAttributeValue: /clock}",
        "{contextAttributeName: subject, contextAttributeValue: fixed}",
        "{contextAttributeName: region, contextAttributeValue: eu}",
        "{contextAttributeName: type}",
    ] {
        assert_eq!(warned(rule), vec![], "{rule}");
    }
}
