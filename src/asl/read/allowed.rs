//! Which fields each JSONPath state type takes, and why a field of another type is not
//! one of its own.

pub const STATE_TYPES: [&str; 8] = [
    "Pass", "Task", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map",
];

/// The fields each state type may have besides `Type` and `Comment`.
pub(super) fn allowed(ty: &str) -> &'static [&'static str] {
    match ty {
        "Pass" => &[
            "Assign",
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultPath",
            "Result",
            "Next",
            "End",
        ],
        "Task" => &[
            "Assign",
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Resource",
            "TimeoutSeconds",
            "TimeoutSecondsPath",
            "HeartbeatSeconds",
            "HeartbeatSecondsPath",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Choice" => &["Assign", "InputPath", "OutputPath", "Choices", "Default"],
        "Wait" => &[
            "Assign",
            "InputPath",
            "OutputPath",
            "Seconds",
            "SecondsPath",
            "Timestamp",
            "TimestampPath",
            "Next",
            "End",
        ],
        "Succeed" => &["InputPath", "OutputPath"],
        "Fail" => &["Error", "ErrorPath", "Cause", "CausePath"],
        "Parallel" => &[
            "Assign",
            "InputPath",
            "OutputPath",
            "Parameters",
            "ResultSelector",
            "ResultPath",
            "Branches",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        "Map" => &[
            "Assign",
            "InputPath",
            "OutputPath",
            "ItemsPath",
            "Iterator",
            "ItemProcessor",
            "MaxConcurrency",
            "MaxConcurrencyPath",
            "ToleratedFailureCount",
            "ToleratedFailureCountPath",
            "ToleratedFailurePercentage",
            "ToleratedFailurePercentagePath",
            "Parameters",
            "ItemSelector",
            "ResultSelector",
            "ResultPath",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
        _ => &[],
    }
}

pub(super) fn allowed_anywhere(k: &str) -> bool {
    STATE_TYPES.iter().any(|t| allowed(t).contains(&k))
}

pub(super) fn why_not(ty: &str, k: &str) -> &'static str {
    match (ty, k) {
        ("Choice", "Next" | "End") => " (a Choice goes where its Choices or Default say)",
        ("Succeed" | "Fail", "Next" | "End") => " (it ends the machine)",
        ("Fail", "InputPath" | "OutputPath") => " (it has no output)",
        ("Succeed" | "Fail", "Assign") => {
            " (the run ends here: there is no later state to read it)"
        }
        (_, "Retry" | "Catch") => " (only Task, Parallel and Map states retry and catch)",
        (_, "ResultPath" | "Parameters" | "ResultSelector") => {
            " (only states that produce a result have it)"
        }
        _ => "",
    }
}
