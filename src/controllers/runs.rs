//! Executes PipelineRuns: claims a pending run, runs its containers through the local executor,
//! turns the output into the pipeline's Work, merges `status.yaml` into the object, and records
//! the outcome. Only one process runs controllers per home, so a run found `Running` at start-up
//! was interrupted and is run again.

use std::path::PathBuf;

use serde_json::{json, Value};
use tracing::{info, warn};

use crate::api::pipeline::Pipeline;
use crate::api::{Object, ObjectKey, Promise};
use crate::pipeline::contract::{
    kratix_env, ResourceObject, Subject as EnvSubject, WorkflowAction, WorkflowEnv,
};
use crate::pipeline::{self, Isolation, RunOutcome, RunRequest, RunResult};
use crate::platform::Platform;
use crate::store::Selector;

use super::{now_rfc3339, promises, status, works, Error, ErrorChain, Next, Runtime};

/// Folder of one run: its input, output, metadata and logs.
pub fn run_dir(platform: &Platform, run: &Object) -> PathBuf {
    platform
        .runs_dir()
        .join(run.metadata.namespace.clone().unwrap_or_default())
        .join(run.metadata.name.clone().unwrap_or_default())
}

pub fn logs_path(platform: &Platform, run: &Object) -> PathBuf {
    run_dir(platform, run).join("logs.txt")
}

fn phase(run: &Object) -> &str {
    run.data
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

/// Runs left `Running` by a process that stopped are run again from the start.
pub async fn recover_interrupted(rt: &Runtime) -> Result<(), Error> {
    let kind = rt.kind("PipelineRun");
    for run in rt.cp.list(&kind, None, &Selector::everything()).await? {
        if phase(&run) == "Running" {
            warn!(run = %ObjectKey::of(&run), "run was interrupted; running it again");
            kill_leftovers(&rt.platform, &run);
            status::update_status(rt.cp.as_ref(), &kind, &ObjectKey::of(&run), |_, s| {
                status::set_field(s, "phase", json!("Pending"));
                status::set_field(s, "message", json!("interrupted; run again"));
            })
            .await?;
        }
    }
    Ok(())
}

pub async fn reconcile(rt: &Runtime, run: Object) -> Result<Next, Error> {
    let key = ObjectKey::of(&run);
    let already_running = rt
        .running
        .lock()
        .map(|set| set.contains(&key))
        .unwrap_or(false);
    match phase(&run) {
        "Pending" if !already_running => {}
        "Running" if !already_running => {
            // Ours, but no task runs it: this process restarted mid-run.
            kill_leftovers(&rt.platform, &run);
            status::update_status(rt.cp.as_ref(), &rt.kind("PipelineRun"), &key, |_, s| {
                status::set_field(s, "phase", json!("Pending"));
            })
            .await?;
            return Ok(Next::Done);
        }
        _ => return Ok(Next::Done),
    }
    let started = now_rfc3339();
    let Some(claimed) =
        status::update_status(rt.cp.as_ref(), &rt.kind("PipelineRun"), &key, |_, s| {
            status::set_field(s, "phase", json!("Running"));
            status::set_field(s, "startTime", json!(started));
            if let Some(map) = s.as_object_mut() {
                for stale in ["completionTime", "message", "exitCode", "workflowControl"] {
                    map.remove(stale);
                }
            }
        })
        .await?
    else {
        return Ok(Next::Done);
    };
    if let Ok(mut set) = rt.running.lock() {
        set.insert(key.clone());
    }
    let rt2 = rt.clone();
    tokio::spawn(async move {
        let result = execute(&rt2, &claimed).await;
        if let Err(err) = &result {
            warn!(run = %key, error = %ErrorChain(err), "pipeline run could not be carried out");
            let message = ErrorChain(err).to_string();
            let _ = finish(&rt2, &key, "Failed", &message, None, None).await;
        }
        if let Ok(mut set) = rt2.running.lock() {
            set.remove(&key);
        }
    });
    Ok(Next::Done)
}

/// Kills what is left of an interrupted run's containers. Plain processes (no sandbox to die
/// with the process that started them) outlive a crash and would run on beside the re-run. Every
/// process a container starts inherits the run's `KRATIX_OUTPUT_DIR`, which names this run's
/// folder and nothing else, so that is how they are found.
fn kill_leftovers(platform: &Platform, run: &Object) {
    let entry = output_dir_entry(&run_dir(platform, run));
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return;
    };
    for process in processes.flatten() {
        let Some(pid) = process
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        // Other users' processes cannot be read, and are none of ours.
        let Ok(environ) = std::fs::read(process.path().join("environ")) else {
            continue;
        };
        if has_env_entry(&environ, entry.as_bytes()) {
            warn!(run = %ObjectKey::of(run), pid, "killing a leftover process of the interrupted run");
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// `KRATIX_OUTPUT_DIR=...` as the process executor gives it to a run's containers.
fn output_dir_entry(run_dir: &std::path::Path) -> String {
    format!("KRATIX_OUTPUT_DIR={}", run_dir.join("output").display())
}

/// Whether a `/proc/<pid>/environ` (NUL-separated `NAME=value` entries) holds `entry` exactly.
fn has_env_entry(environ: &[u8], entry: &[u8]) -> bool {
    environ.split(|b| *b == 0).any(|e| e == entry)
}

async fn finish(
    rt: &Runtime,
    key: &ObjectKey,
    phase: &str,
    message: &str,
    exit_code: Option<i32>,
    control: Option<Value>,
) -> Result<(), Error> {
    let done = now_rfc3339();
    status::update_status(rt.cp.as_ref(), &rt.kind("PipelineRun"), key, |_, s| {
        status::set_field(s, "phase", json!(phase));
        status::set_field(s, "completionTime", json!(done));
        if !message.is_empty() {
            status::set_field(s, "message", json!(message));
        }
        if let Some(code) = exit_code {
            status::set_field(s, "exitCode", json!(code));
        }
        if let Some(c) = &control {
            status::set_field(s, "workflowControl", c.clone());
        }
    })
    .await?;
    Ok(())
}

async fn execute(rt: &Runtime, run: &Object) -> Result<(), Error> {
    let key = ObjectKey::of(run);
    let run_name = key.name.clone();
    let spec = run.data.get("spec").cloned().unwrap_or_default();
    let text = |field: &str| {
        spec.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let bad = |reason: String| Error::Run {
        run: run_name.clone(),
        reason,
    };
    let pipeline: Pipeline =
        serde_json::from_value(spec.get("pipeline").cloned().unwrap_or_default())
            .map_err(|e| bad(format!("stored pipeline is invalid: {e}")))?;
    let promise_name = text("promiseName");
    let action = match text("workflowAction").as_str() {
        "delete" => WorkflowAction::Delete,
        _ => WorkflowAction::Configure,
    };
    let promise_obj = promises::get(rt, &promise_name)
        .await?
        .ok_or_else(|| bad(format!("Promise {promise_name:?} not found")))?;
    let promise: Promise =
        crate::api::object::to_typed(&promise_obj).map_err(|e| bad(e.to_string()))?;

    // The live object, as Kratix's reader gives it to the pipeline.
    let (object, env_subject, parent_kind) = if text("workflowType") == "resource" {
        let kind = promises::request_kind_of(rt, &promise_name)
            .await?
            .ok_or_else(|| bad(format!("Promise {promise_name:?} defines no request kind")))?;
        let ns = text("resourceNamespace");
        let name = text("resourceName");
        let obj = rt
            .cp
            .get(&kind, Some(&ns), &name)
            .await?
            .ok_or_else(|| bad(format!("{} {ns}/{name} not found", kind.kind)))?;
        let env = EnvSubject::Resource(ResourceObject {
            kind: kind.kind.clone(),
            group: kind.group.clone(),
            version: kind.version.clone(),
            plural: kind.plural.clone(),
            name,
            namespace: ns,
            cluster_scoped: false,
        });
        (obj, env, kind)
    } else {
        (promise_obj.clone(), EnvSubject::Promise, rt.kind("Promise"))
    };
    let object_yaml = serde_yaml::to_string(&object).map_err(|e| bad(e.to_string()))?;
    let env = kratix_env(&WorkflowEnv {
        action,
        promise_name: promise_name.clone(),
        pipeline_name: pipeline.name().to_string(),
        subject: env_subject,
        dry_run: false,
    });
    let work_dir = run_dir(&rt.platform, run);
    if work_dir.exists() {
        std::fs::remove_dir_all(&work_dir)
            .map_err(|e| bad(format!("clearing {}: {e}", work_dir.display())))?;
    }
    std::fs::create_dir_all(&work_dir)
        .map_err(|e| bad(format!("creating {}: {e}", work_dir.display())))?;
    let isolation = Isolation::from_env().map_err(|e| bad(ErrorChain(&e).to_string()))?;
    let images = pipeline::ImageMap::load_for_home(&rt.platform.home)
        .map_err(|e| bad(ErrorChain(&e).to_string()))?;
    info!(run = %run_name, pipeline = pipeline.name(), "pipeline run started");
    let outcome: RunOutcome = pipeline::run(RunRequest {
        run_name: run_name.clone(),
        pipeline: pipeline.clone(),
        object_yaml,
        env,
        work_dir: work_dir.clone(),
        timeout: rt.settings.pipeline_timeout,
        images,
        isolation,
        hidden: vec![rt.platform.home.clone()],
    })
    .await
    .map_err(|e| bad(ErrorChain(&e).to_string()))?;

    let (phase, message, exit_code) = match &outcome.result {
        RunResult::Succeeded => ("Succeeded", String::new(), Some(0)),
        RunResult::Failed {
            container,
            exit_code,
            reason,
        } => (
            "Failed",
            match exit_code {
                Some(code) => format!(
                    "container {container} exited with code {code}{}",
                    suffix(reason)
                ),
                None => format!("container {container} failed{}", suffix(reason)),
            },
            *exit_code,
        ),
        RunResult::TimedOut { container } => (
            "Failed",
            format!(
                "container {container} timed out after {}s",
                rt.settings.pipeline_timeout.as_secs()
            ),
            None,
        ),
    };
    let control = &outcome.metadata.workflow_control;
    let control_value = control.suspend.then(|| {
        json!({
            "suspend": true,
            "retryAfterMs": control.retry_after.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            "message": control.message.clone().unwrap_or_default(),
        })
    });
    if phase == "Succeeded" {
        if action == WorkflowAction::Configure && !control.suspend {
            if let Some(output) = &outcome.output {
                works::upsert_from_run(rt, run, &promise, output, &outcome.metadata)
                    .await
                    .map_err(|e| match e {
                        Error::Run { reason, .. } => bad(reason),
                        other => other,
                    })?;
            }
        }
        if let Some(status_yaml) = &outcome.metadata.status {
            merge_status(rt, &parent_kind, &ObjectKey::of(&object), status_yaml).await?;
        }
    }
    info!(run = %run_name, phase, "pipeline run finished");
    finish(rt, &key, phase, &message, exit_code, control_value).await
}

fn suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// Merges a pipeline's `status.yaml` into the object's status: top-level keys replaced,
/// `conditions` merged by type.
async fn merge_status(
    rt: &Runtime,
    kind: &crate::api::KindInfo,
    key: &ObjectKey,
    from_pipeline: &Value,
) -> Result<(), Error> {
    status::update_status(rt.cp.as_ref(), kind, key, |_, s| {
        let Some(fields) = from_pipeline.as_object() else {
            return;
        };
        for (k, v) in fields {
            if k == "conditions" {
                if let Ok(conds) = serde_json::from_value::<Vec<crate::api::Condition>>(v.clone()) {
                    status::set_conditions(s, conds);
                }
            } else {
                status::set_field(s, k, v.clone());
            }
        }
    })
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_are_recognised_by_their_exact_output_dir() {
        let entry = output_dir_entry(std::path::Path::new("/home/x/runs/default/r-a-1"));
        assert_eq!(entry, "KRATIX_OUTPUT_DIR=/home/x/runs/default/r-a-1/output");
        let cases: [(&[u8], bool); 5] = [
            (
                b"PATH=/bin\0KRATIX_OUTPUT_DIR=/home/x/runs/default/r-a-1/output\0",
                true,
            ),
            (b"KRATIX_OUTPUT_DIR=/home/x/runs/default/r-a-1/output", true),
            (
                b"KRATIX_OUTPUT_DIR=/home/x/runs/default/r-a-10/output\0",
                false,
            ),
            (b"KRATIX_OUTPUT_DIR=/kratix/output\0", false),
            (b"", false),
        ];
        for (environ, want) in cases {
            assert_eq!(
                has_env_entry(environ, entry.as_bytes()),
                want,
                "{}",
                String::from_utf8_lossy(environ)
            );
        }
    }
}
