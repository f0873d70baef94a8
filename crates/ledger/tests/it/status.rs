//! `TaskStatus`: protocol names, tasks.md markers, and their round trips through the
//! parser and serde.

use ledger::{TaskStatus, parse_tasks};

#[test]
fn names_parse_and_display_round_trip() {
    for status in TaskStatus::ALL {
        assert_eq!(TaskStatus::from_name(status.as_str()), Some(status));
        assert_eq!(status.as_str().parse::<TaskStatus>(), Ok(status));
        assert_eq!(status.to_string(), status.as_str());
        let json = serde_json::to_string(&status).unwrap();
        assert_eq!(json, format!("\"{}\"", status.as_str()));
        assert_eq!(serde_json::from_str::<TaskStatus>(&json).unwrap(), status);
    }
    assert_eq!(
        TaskStatus::ALL.map(TaskStatus::as_str),
        ["pending", "in_progress", "completed"]
    );
}

#[test]
fn unknown_names_are_rejected_with_the_allowed_list() {
    for bad in [
        "",
        "done",
        "Completed",
        "in-progress",
        " pending",
        "pending ",
    ] {
        assert_eq!(TaskStatus::from_name(bad), None, "{bad:?}");
        let err = bad.parse::<TaskStatus>().unwrap_err();
        assert_eq!(err.input, bad);
        assert!(
            err.to_string()
                .ends_with("allowed: pending, in_progress, completed"),
            "{err}"
        );
    }
    let long = "y".repeat(200);
    assert!(
        long.parse::<TaskStatus>()
            .unwrap_err()
            .input
            .chars()
            .count()
            <= 64
    );
}

#[test]
fn markers_are_the_checkbox_characters() {
    assert_eq!(TaskStatus::Completed.marker(), 'x');
    assert_eq!(TaskStatus::InProgress.marker(), '-');
    assert_eq!(TaskStatus::Pending.marker(), ' ');
    assert_eq!(TaskStatus::from_marker('X'), Some(TaskStatus::Completed));
    for bad in ['~', '*', 'o', '\t', 'v'] {
        assert_eq!(TaskStatus::from_marker(bad), None, "{bad:?}");
    }
    // A line written with the marker parses back to the status.
    for status in TaskStatus::ALL {
        assert_eq!(TaskStatus::from_marker(status.marker()), Some(status));
        let line = format!("- [{}] 1. Title\n", status.marker());
        let (tasks, diagnostics) = parse_tasks(&line);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(tasks[0].status(), status);
    }
}
