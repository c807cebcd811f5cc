//! What Promises and requests report of their workflow in `status.pipelines`: one entry per
//! pipeline of the current attempt and, for requests, where its files landed.

use serde::Serialize;

/// One pipeline of the current attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineStatusEntry {
    pub name: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Suspended`.
    pub phase: &'static str,
    pub attempts: u32,
    /// The suspension message while suspended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// RFC 3339 time at which a failed pipeline is retried or a suspended one resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<String>,
    /// Requests only: where the pipeline's files went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destinations: Option<Vec<Landing>>,
}

/// Where one placement of a pipeline's files landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Landing {
    /// `null` when the placement cannot be read.
    pub destination: Option<String>,
    /// The state store's version (Git commit) holding the files; `null` until written.
    pub version: Option<String>,
    /// The files are written for the placement's current generation.
    pub written: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_are_stored_in_the_shape_status_readers_expect() {
        let cases = [
            (
                PipelineStatusEntry {
                    name: "a".into(),
                    phase: "Running",
                    attempts: 1,
                    message: None,
                    next_retry_at: None,
                    destinations: None,
                },
                json!({"name": "a", "phase": "Running", "attempts": 1}),
            ),
            (
                PipelineStatusEntry {
                    name: "b".into(),
                    phase: "Failed",
                    attempts: 2,
                    message: Some("m".into()),
                    next_retry_at: Some("2026-01-01T00:00:00Z".into()),
                    destinations: Some(vec![
                        Landing {
                            destination: Some("d".into()),
                            version: None,
                            written: false,
                        },
                        Landing {
                            destination: None,
                            version: Some("abc".into()),
                            written: true,
                        },
                    ]),
                },
                json!({"name": "b", "phase": "Failed", "attempts": 2, "message": "m",
                       "nextRetryAt": "2026-01-01T00:00:00Z",
                       "destinations": [
                           {"destination": "d", "version": null, "written": false},
                           {"destination": null, "version": "abc", "written": true}]}),
            ),
        ];
        for (entry, stored) in cases {
            assert_eq!(
                serde_json::to_value(&entry).expect("serializable"),
                stored,
                "{}",
                entry.name
            );
        }
    }
}
