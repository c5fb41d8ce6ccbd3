//! Reading a demo report's `summary.json` in the demo sections' end-to-end tests: one
//! table's rows by its title, and the first number of a cell.

// Test helpers outside #[test] functions: a malformed report is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

/// The rows (column -> cell) of the table titled `title` in `summary.json`.
pub fn table_rows(summary: &serde_json::Value, title: &str) -> Vec<HashMap<String, String>> {
    let table = summary["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == title)
        .unwrap_or_else(|| panic!("no {title:?} table in {summary:#}"));
    let columns: Vec<String> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let cells = r
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_owned());
            columns.iter().cloned().zip(cells).collect()
        })
        .collect()
}

/// The first number in a cell ("84.6 (p99 384 ms)" -> 84.6).
pub fn first_number(cell: &str) -> f64 {
    cell.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|s| !s.is_empty())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no number in {cell:?}"))
}
