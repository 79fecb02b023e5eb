//! The eighteen intrinsic functions as data: each one's name, parameters (with the type each
//! takes), how many arguments it accepts and the type of what it returns. Deploy-time checks
//! read this table; the implementations live in [`super::funcs`].

use serde_json::Value;

/// One of the intrinsic functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Format,
    StringToJson,
    JsonToString,
    Array,
    ArrayPartition,
    ArrayContains,
    ArrayRange,
    ArrayGetItem,
    ArrayLength,
    ArrayUnique,
    Base64Encode,
    Base64Decode,
    Hash,
    JsonMerge,
    MathRandom,
    MathAdd,
    StringSplit,
    Uuid,
}

/// The JSON type a parameter takes or a function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Any,
    String,
    Number,
    Bool,
    Array,
    Object,
    Null,
}

/// A function's parameters: the fixed ones (the last `optional` of them may be left out), then
/// any number of `rest` ones.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sig {
    pub params: &'static [(&'static str, Ty)],
    pub optional: usize,
    pub rest: Option<(&'static str, Ty)>,
    pub returns: Ty,
}

const fn sig(params: &'static [(&'static str, Ty)], returns: Ty) -> Sig {
    Sig {
        params,
        optional: 0,
        rest: None,
        returns,
    }
}

impl Func {
    /// Every function, in the order AWS documents them.
    pub const ALL: [Func; 18] = [
        Func::Array,
        Func::ArrayPartition,
        Func::ArrayContains,
        Func::ArrayRange,
        Func::ArrayGetItem,
        Func::ArrayLength,
        Func::ArrayUnique,
        Func::Base64Encode,
        Func::Base64Decode,
        Func::Hash,
        Func::JsonMerge,
        Func::StringToJson,
        Func::JsonToString,
        Func::MathRandom,
        Func::MathAdd,
        Func::StringSplit,
        Func::Uuid,
        Func::Format,
    ];

    /// The name as written in a machine, e.g. `States.Format`.
    pub fn name(self) -> &'static str {
        match self {
            Func::Format => "States.Format",
            Func::StringToJson => "States.StringToJson",
            Func::JsonToString => "States.JsonToString",
            Func::Array => "States.Array",
            Func::ArrayPartition => "States.ArrayPartition",
            Func::ArrayContains => "States.ArrayContains",
            Func::ArrayRange => "States.ArrayRange",
            Func::ArrayGetItem => "States.ArrayGetItem",
            Func::ArrayLength => "States.ArrayLength",
            Func::ArrayUnique => "States.ArrayUnique",
            Func::Base64Encode => "States.Base64Encode",
            Func::Base64Decode => "States.Base64Decode",
            Func::Hash => "States.Hash",
            Func::JsonMerge => "States.JsonMerge",
            Func::MathRandom => "States.MathRandom",
            Func::MathAdd => "States.MathAdd",
            Func::StringSplit => "States.StringSplit",
            Func::Uuid => "States.UUID",
        }
    }

    /// The function of that exact (case-sensitive) name.
    pub fn from_name(name: &str) -> Option<Func> {
        Func::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its parameters and result type.
    pub fn sig(self) -> Sig {
        use Ty::*;
        match self {
            Func::Format => Sig {
                params: &[("template", String)],
                optional: 0,
                rest: Some(("value", Any)),
                returns: String,
            },
            Func::StringToJson => sig(&[("JSON text", String)], Any),
            Func::JsonToString => sig(&[("value", Any)], String),
            Func::Array => Sig {
                params: &[],
                optional: 0,
                rest: Some(("item", Any)),
                returns: Array,
            },
            Func::ArrayPartition => sig(&[("array", Array), ("chunk size", Number)], Array),
            Func::ArrayContains => sig(&[("array", Array), ("value", Any)], Bool),
            Func::ArrayRange => sig(
                &[("first", Number), ("last", Number), ("step", Number)],
                Array,
            ),
            Func::ArrayGetItem => sig(&[("array", Array), ("index", Number)], Any),
            Func::ArrayLength => sig(&[("array", Array)], Number),
            Func::ArrayUnique => sig(&[("array", Array)], Array),
            Func::Base64Encode => sig(&[("text", String)], String),
            Func::Base64Decode => sig(&[("Base64 text", String)], String),
            Func::Hash => sig(&[("data", String), ("algorithm", String)], String),
            Func::JsonMerge => sig(
                &[
                    ("first object", Object),
                    ("second object", Object),
                    ("deep", Bool),
                ],
                Object,
            ),
            Func::MathRandom => Sig {
                params: &[("start", Number), ("end", Number), ("seed", Number)],
                optional: 1,
                rest: None,
                returns: Number,
            },
            Func::MathAdd => sig(
                &[("first number", Number), ("second number", Number)],
                Number,
            ),
            Func::StringSplit => sig(&[("text", String), ("delimiters", String)], Array),
            Func::Uuid => sig(&[], String),
        }
    }
}

impl Sig {
    /// The fewest arguments a call may have.
    pub fn min(&self) -> usize {
        self.params.len() - self.optional
    }

    /// The most arguments a call may have (`None`: no limit).
    pub fn max(&self) -> Option<usize> {
        self.rest.is_none().then_some(self.params.len())
    }

    /// The name and type of the argument at `index` (0-based).
    pub fn param(&self, index: usize) -> Option<(&'static str, Ty)> {
        self.params.get(index).copied().or(self.rest)
    }

    /// How many arguments it takes, in words, e.g. "2 arguments (array, chunk size)".
    pub fn arity(&self) -> std::string::String {
        let names: Vec<&str> = self.params.iter().map(|p| p.0).collect();
        let (fixed, optional) = names.split_at(self.min());
        let mut list = fixed.join(", ");
        for o in optional {
            list.push_str(if list.is_empty() { "[" } else { "[, " });
            list.push_str(o);
            list.push(']');
        }
        match (self.rest, self.min(), self.max()) {
            (Some((rest, _)), 0, _) => format!("any number of arguments ({rest}, ...)"),
            (Some((rest, _)), n, _) => format!("{n} or more arguments ({list}, {rest}, ...)"),
            (None, 0, Some(0)) => "no arguments".to_string(),
            (None, 1, Some(1)) => format!("1 argument ({list})"),
            (None, n, Some(m)) if n == m => format!("{n} arguments ({list})"),
            (None, n, Some(m)) => format!("{n} to {m} arguments ({list})"),
            (None, n, None) => format!("{n} or more arguments ({list})"),
        }
    }
}

impl Ty {
    /// The type of a JSON value.
    pub fn of(v: &Value) -> Ty {
        match v {
            Value::Null => Ty::Null,
            Value::Bool(_) => Ty::Bool,
            Value::Number(_) => Ty::Number,
            Value::String(_) => Ty::String,
            Value::Array(_) => Ty::Array,
            Value::Object(_) => Ty::Object,
        }
    }

    /// Whether a parameter of this type takes a value of type `given` (`Any` on either side
    /// takes anything: a value of unknown type is checked when the call runs).
    pub fn accepts(self, given: Ty) -> bool {
        self == Ty::Any || given == Ty::Any || self == given
    }

    /// The type in words, with its article: "a string", "an array".
    pub fn words(self) -> &'static str {
        match self {
            Ty::Any => "any value",
            Ty::String => "a string",
            Ty::Number => "a number",
            Ty::Bool => "true or false",
            Ty::Array => "an array",
            Ty::Object => "a JSON object",
            Ty::Null => "null",
        }
    }
}
