//! An Amazon States Language state machine as data: the top level, the eight state types,
//! their input/output fields, retriers and catchers. Built by [`super::read`] from JSON or
//! YAML, with every problem located; checked as a whole by [`super::check`].

use super::intrinsic::Call;
use super::jsonata::Expr;
use super::path::{Path, RefPath};
use super::rules::Rule;
use serde_json::Value;

/// A state machine, or a Parallel branch or Map iterator (the same shape: `StartAt` and
/// `States`).
#[derive(Debug, Clone)]
pub struct States {
    pub start_at: String,
    /// In document order.
    pub states: Vec<State>,
}

impl States {
    pub fn get(&self, name: &str) -> Option<&State> {
        self.states.iter().find(|s| s.name == name)
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.states.iter().position(|s| s.name == name)
    }
}

/// The top level.
#[derive(Debug, Clone)]
pub struct Machine {
    pub comment: Option<String>,
    pub version: String,
    /// The whole run's limit (`TimeoutSeconds`): `States.Timeout` after it.
    pub timeout_seconds: Option<u64>,
    pub body: States,
    /// What the paths read of the context object (`$$...`): the interpreter builds no more.
    pub context: ContextUse,
    /// Some state is JSONata: scopes carry `$states`.
    pub jsonata: bool,
}

/// How much of the context object a machine's paths can reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContextUse {
    /// No path reads `$$`.
    None,
    /// Only fields other than `$$.Execution.Input`.
    WithoutInput,
    /// Possibly everything.
    Full,
}

/// Where a state goes when it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    Next(String),
    End,
}

/// A path field that may be absent (the default `$`) or `null` (discard).
#[derive(Debug, Clone, Default)]
pub enum PathField<P> {
    #[default]
    Default,
    Null,
    Path(P),
}

/// The query language of a state's fields (`QueryLanguage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lang {
    #[default]
    JsonPath,
    Jsonata,
}

/// The input and output fields a state may have: JSONPath's five, or JSONata's `Arguments`
/// and `Output` (`jsonata` says which).
#[derive(Debug, Clone, Default)]
pub struct Io {
    pub jsonata: bool,
    /// JSONata: what a Task or Parallel works on (absent: its input).
    pub arguments: Option<Template>,
    /// JSONata: what the state passes on (absent: its result, or its input).
    pub output: Option<Template>,
    pub input_path: PathField<Path>,
    pub output_path: PathField<Path>,
    pub result_path: PathField<RefPath>,
    /// `Parameters` (Map: `ItemSelector` or `Parameters`).
    pub parameters: Option<Template>,
    pub result_selector: Option<Template>,
}

/// A `Parameters`/`ResultSelector` value: keys ending in `.$` take a path's selection.
#[derive(Debug, Clone)]
pub enum Template {
    Literal(Value),
    /// A JSONata state's `"{% ... %}"` string.
    Expr(Expr),
    Object(Vec<(String, TemplateField)>),
    Array(Vec<Template>),
}

#[derive(Debug, Clone)]
pub enum TemplateField {
    /// `"name.$": "$.path"` (stored without the `.$`).
    Path(Path),
    /// `"name.$": "States.Format(...)"`: an intrinsic function's result.
    Call(Call),
    Value(Template),
}

/// An error name matcher list (`ErrorEquals`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Errors(pub Vec<String>);

impl Errors {
    /// Whether an error named `name` is one of these: by name, or by the wildcards
    /// `States.ALL` (anything but `States.Runtime`, an error in the machine itself) and
    /// `States.TaskFailed` (anything but that and `States.Timeout`), as Step Functions does
    /// (docs/semantics.md "ASL errors").
    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|e| {
            e == name
                || match e.as_str() {
                    "States.ALL" => name != "States.Runtime",
                    "States.TaskFailed" => name != "States.Timeout" && name != "States.Runtime",
                    _ => false,
                }
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Retrier {
    pub errors: Errors,
    pub interval_seconds: u64,
    pub max_attempts: u64,
    pub backoff_rate: f64,
    /// `MaxDelaySeconds`: no wait is longer.
    pub max_delay_seconds: Option<u64>,
    /// `JitterStrategy: FULL`: each wait is drawn between 0 and the computed one.
    pub jitter: bool,
}

#[derive(Debug, Clone)]
pub struct Catcher {
    pub errors: Errors,
    pub next: String,
    pub result_path: PathField<RefPath>,
    /// JSONata: what the catcher passes on (absent: the Error Output).
    pub output: Option<Template>,
    /// Variables set from the Error Output when this catcher is taken (in the state's scope).
    pub assign: Option<Template>,
}

/// A seconds field given as a number or read from the data.
#[derive(Debug, Clone)]
pub enum Seconds {
    Fixed(u64),
    Path(RefPath),
    Expr(Expr),
}

#[derive(Debug, Clone)]
pub struct Task {
    pub resource: String,
    /// `TimeoutSeconds` (default 60) or `TimeoutSecondsPath`.
    pub timeout: Seconds,
    pub heartbeat: Option<Seconds>,
    pub retry: Vec<Retrier>,
    pub catch: Vec<Catcher>,
}

impl Task {
    /// The `.waitForTaskToken` integration pattern: the task waits for a token's answer.
    pub fn waits_for_token(&self) -> bool {
        self.resource.ends_with(".waitForTaskToken")
    }
}

#[derive(Debug, Clone)]
pub struct Choice {
    pub choices: Vec<ChoiceRule>,
    pub default: Option<String>,
}

/// A top-level Choice Rule: where it goes, and the variables it sets, when it matches.
#[derive(Debug, Clone)]
pub struct ChoiceRule {
    pub rule: Cond,
    pub next: String,
    pub assign: Option<Template>,
    /// JSONata: what the state passes on when this rule matches.
    pub output: Option<Template>,
}

/// A top-level Choice Rule's test: a JSONPath rule, or a JSONata `Condition`.
#[derive(Debug, Clone)]
pub enum Cond {
    Rule(Rule),
    Jsonata(Expr),
}

impl Cond {
    /// As written (for graphs).
    pub fn describe(&self) -> String {
        match self {
            Cond::Rule(r) => r.describe(),
            Cond::Jsonata(e) => format!("{{% {} %}}", e.source()),
        }
    }
}

#[derive(Debug, Clone)]
pub enum Wait {
    Seconds(u64),
    Timestamp(chrono::DateTime<chrono::Utc>),
    SecondsPath(RefPath),
    TimestampPath(RefPath),
    /// JSONata: `Seconds` or `Timestamp` (`timestamp`) as an expression.
    Expr {
        timestamp: bool,
        expr: Expr,
    },
}

#[derive(Debug, Clone)]
pub struct Parallel {
    pub branches: Vec<States>,
    pub retry: Vec<Retrier>,
    pub catch: Vec<Catcher>,
}

/// A whole number given as it is or read from the state's input (a `...Path` field).
#[derive(Debug, Clone)]
pub enum Count {
    Fixed(u64),
    Path(RefPath),
    Expr(Expr),
}

/// A percentage (0 to 100) given as it is or read from the state's input.
#[derive(Debug, Clone)]
pub enum Share {
    Fixed(f64),
    Path(RefPath),
    Expr(Expr),
}

/// How many of a Map's iterations may fail before the Map does
/// (`States.ExceedToleratedFailureThreshold`); none given: not one.
#[derive(Debug, Clone, Default)]
pub struct Tolerance {
    pub count: Option<Count>,
    pub percentage: Option<Share>,
}

impl Tolerance {
    /// Whether any failure is tolerated at all (else the first one fails the Map at once).
    pub fn any(&self) -> bool {
        self.count.is_some() || self.percentage.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct MapState {
    pub items_path: PathField<Path>,
    /// JSONata: the items (an array, or an expression that makes one; absent: the input).
    pub items: Option<Template>,
    pub iterator: States,
    /// 0: no limit.
    pub max_concurrency: Count,
    pub tolerated: Tolerance,
    pub retry: Vec<Retrier>,
    pub catch: Vec<Catcher>,
}

/// A Fail state's `Error` or `Cause`: given, or made when the state is entered
/// (`ErrorPath`/`CausePath`: a path or an intrinsic function on the state's input).
#[derive(Debug, Clone)]
pub enum Text {
    Fixed(String),
    Path(Path),
    Call(Call),
    Expr(Expr),
}

impl Text {
    /// As written (for graphs).
    pub fn describe(&self) -> String {
        match self {
            Text::Fixed(s) => s.clone(),
            Text::Path(p) => p.source().to_string(),
            Text::Call(c) => format!("{}(...)", c.name()),
            Text::Expr(e) => format!("{{% {} %}}", e.source()),
        }
    }
}

/// A Fail state's error name and cause.
#[derive(Debug, Clone)]
pub struct Fail {
    pub error: Option<Text>,
    pub cause: Option<Text>,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Pass { result: Option<Value> },
    Task(Box<Task>),
    Choice(Box<Choice>),
    Wait(Wait),
    Succeed,
    Fail(Box<Fail>),
    Parallel(Box<Parallel>),
    Map(Box<MapState>),
}

impl Kind {
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Pass { .. } => "Pass",
            Kind::Task(_) => "Task",
            Kind::Choice(_) => "Choice",
            Kind::Wait(_) => "Wait",
            Kind::Succeed => "Succeed",
            Kind::Fail(_) => "Fail",
            Kind::Parallel(_) => "Parallel",
            Kind::Map(_) => "Map",
        }
    }

    /// The catchers of a Task, Parallel or Map.
    pub fn catchers(&self) -> &[Catcher] {
        match self {
            Kind::Task(t) => &t.catch,
            Kind::Parallel(p) => &p.catch,
            Kind::Map(m) => &m.catch,
            _ => &[],
        }
    }

    pub fn retriers(&self) -> &[Retrier] {
        match self {
            Kind::Task(t) => &t.retry,
            Kind::Parallel(p) => &p.retry,
            Kind::Map(m) => &m.retry,
            _ => &[],
        }
    }
}

#[derive(Debug, Clone)]
pub struct State {
    pub name: String,
    pub comment: Option<String>,
    pub kind: Kind,
    pub io: Io,
    /// `None` for Choice, Succeed and Fail.
    pub flow: Option<Flow>,
    /// `Assign`: variables set when the state is done, from its result (Pass, Task,
    /// Parallel, Map) or its effective input (Choice when its `Default` is taken, Wait).
    /// Always a [`Template::Object`] keyed by variable name.
    pub assign: Option<Template>,
    pub lang: Lang,
}

impl State {
    /// Every state this one can go to: `Next`, Choice targets and `Default`, catchers.
    pub fn targets(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some(Flow::Next(n)) = &self.flow {
            out.push(n.as_str());
        }
        if let Kind::Choice(c) = &self.kind {
            out.extend(c.choices.iter().map(|c| c.next.as_str()));
            out.extend(c.default.as_deref());
        }
        out.extend(self.kind.catchers().iter().map(|c| c.next.as_str()));
        out
    }

    /// A state the machine (or branch) can end in.
    pub fn is_terminal(&self) -> bool {
        matches!(self.kind, Kind::Succeed | Kind::Fail(_)) || self.flow == Some(Flow::End)
    }
}
