//! Plays the kubelet for pipeline Jobs on a control plane without nodes (scripts/testworld): runs
//! each pending pod's init containers and containers in order as local processes, with the
//! pod's environment and its emptyDir and ConfigMap volumes as temporary folders (bound at the
//! `/kratix/*` paths through `KRATIX_INPUT_DIR` and friends, as the local executor does without
//! a sandbox),
//! and writes the pod's status so that the real Job controller completes or fails the Job.
//!
//! Each container gets a kubeconfig holding the token of the pod's ServiceAccount (the token
//! controller's Secret), as a kubelet mounts it: the adapters act with exactly the rights the
//! pipeline's roles give.
//!
//! Images: the adapter image runs the built `kratix-rs`; others run the command of the image
//! map (as in `<home>/images.yaml`) unless the container gives its own. A container that fails
//! fails the pod (phase Failed, whatever its restart policy); a pod that is deleted while a
//! container runs has that container killed. Termination messages follow
//! `FallbackToLogsOnError`: the tail of the log of a failed container.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};
use kratix::pipeline::images::{resolve_command, ImageMap};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{json, Value};

/// The label every pipeline pod carries.
const PIPELINE_PODS: &str = "app.kubernetes.io/managed-by=Kratix";
/// FallbackToLogsOnError keeps at most this much of the log.
const MESSAGE_BYTES: usize = 2048;
const MESSAGE_LINES: usize = 80;

/// Runs in the background until dropped.
pub(crate) struct Kubelet {
    task: tokio::task::JoinHandle<()>,
    /// Names of the pods it ran, in order.
    pub ran: Arc<Mutex<Vec<String>>>,
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How to run the pods' containers.
#[derive(Clone)]
pub(crate) struct Node {
    pub client: Client,
    /// The cluster's kubeconfig: its server and CA go into each pod's own kubeconfig.
    pub kubeconfig: PathBuf,
    /// Images without a command of their own, and the adapter image → `kratix-rs`.
    pub images: ImageMap,
    /// Where the pods' folders go.
    pub root: PathBuf,
}

impl Kubelet {
    pub(crate) fn start(node: Node) -> Self {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let seen = ran.clone();
        let task = tokio::spawn(async move {
            let pods: Api<Pod> = Api::all(node.client.clone());
            let mut taken: HashSet<String> = HashSet::new();
            loop {
                if let Ok(list) = pods
                    .list(&ListParams::default().labels(PIPELINE_PODS))
                    .await
                {
                    for pod in list.items {
                        let uid = pod.metadata.uid.clone().unwrap_or_default();
                        let pending = pod
                            .status
                            .as_ref()
                            .and_then(|s| s.phase.as_deref())
                            .is_none_or(|p| p == "Pending");
                        if pending && pod.metadata.deletion_timestamp.is_none() && taken.insert(uid)
                        {
                            let name = pod.metadata.name.clone().unwrap_or_default();
                            seen.lock().expect("not poisoned").push(name);
                            tokio::spawn(run_pod(node.clone(), pod));
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Kubelet { task, ran }
    }
}

/// What a container left behind.
struct Terminated {
    exit_code: i32,
    message: String,
}

fn container_status(c: &Container, state: Value) -> Value {
    json!({
        "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
        "ready": false, "restartCount": 0, "state": state,
    })
}

fn terminated(t: &Terminated) -> Value {
    let mut state = json!({"exitCode": t.exit_code, "reason": if t.exit_code == 0 { "Completed" } else { "Error" }});
    if !t.message.is_empty() {
        state["message"] = json!(t.message);
    }
    json!({"terminated": state})
}

async fn write_status(pods: &Api<Pod>, name: &str, phase: &str, init: &[Value], main: &[Value]) {
    let patch = json!({"status": {
        "phase": phase,
        "initContainerStatuses": init,
        "containerStatuses": main,
    }});
    let _ = pods
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
}

async fn run_pod(node: Node, pod: Pod) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(node.client.clone(), &namespace);
    let Some(spec) = pod.spec.clone() else { return };
    let dir = node.root.join(&name);
    let volumes: BTreeMap<String, PathBuf> = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| v.empty_dir.is_some() || v.config_map.is_some())
        .map(|v| (v.name.clone(), dir.join("volumes").join(&v.name)))
        .collect();
    for path in volumes.values() {
        let _ = std::fs::create_dir_all(path);
    }
    for volume in spec.volumes.iter().flatten() {
        let Some(source) = &volume.config_map else {
            continue;
        };
        if let Err(e) = config_map_volume(&node, &namespace, source, &volumes[&volume.name]).await {
            // As a kubelet that cannot mount a volume: the pod fails before any container.
            eprintln!("test kubelet: pod {namespace}/{name}: {e}");
            write_status(&pods, &name, "Failed", &[], &[]).await;
            return;
        }
    }
    let kubeconfig = match service_account_kubeconfig(&node, &namespace, &spec, &dir).await {
        Ok(path) => path,
        Err(e) => {
            // As a kubelet that cannot mount the token: the pod fails before any container.
            eprintln!("test kubelet: pod {namespace}/{name}: {e}");
            write_status(&pods, &name, "Failed", &[], &[]).await;
            return;
        }
    };
    let init_containers = spec.init_containers.clone().unwrap_or_default();
    let waiting = json!({"waiting": {"reason": "PodInitializing"}});
    let mut init: Vec<Value> = init_containers
        .iter()
        .map(|c| container_status(c, waiting.clone()))
        .collect();
    let mut main: Vec<Value> = spec
        .containers
        .iter()
        .map(|c| container_status(c, waiting.clone()))
        .collect();
    let steps = init_containers
        .iter()
        .map(|c| (true, c))
        .chain(spec.containers.iter().map(|c| (false, c)));
    let (mut i, mut m) = (0, 0);
    for (is_init, c) in steps {
        let slot = if is_init { &mut init[i] } else { &mut main[m] };
        *slot = container_status(c, json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}}));
        write_status(&pods, &name, "Pending", &init, &main).await;
        let result = run_container(&node, &pods, &pod, c, &volumes, &dir, &kubeconfig).await;
        let Some(result) = result else {
            return; // the pod is gone
        };
        let failed = result.exit_code != 0;
        let slot = if is_init { &mut init[i] } else { &mut main[m] };
        *slot = container_status(c, terminated(&result));
        if is_init {
            i += 1;
        } else {
            m += 1;
        }
        if failed {
            write_status(&pods, &name, "Failed", &init, &main).await;
            return;
        }
    }
    write_status(&pods, &name, "Succeeded", &init, &main).await;
}

/// Writes the keys of a ConfigMap volume (its `items`, else every key) into `dir`, as a kubelet
/// mounts them (read-only there; the pipelines' mounts of it are read-only anyway).
async fn config_map_volume(
    node: &Node,
    namespace: &str,
    source: &k8s_openapi::api::core::v1::ConfigMapVolumeSource,
    dir: &Path,
) -> Result<(), String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let maps: Api<ConfigMap> = Api::namespaced(node.client.clone(), namespace);
    let cm = maps
        .get(&source.name)
        .await
        .map_err(|e| format!("ConfigMap {}: {e}", source.name))?;
    let data = cm.data.unwrap_or_default();
    let items: Vec<(String, String)> = match &source.items {
        Some(items) => items
            .iter()
            .map(|i| (i.key.clone(), i.path.clone()))
            .collect(),
        None => data.keys().map(|k| (k.clone(), k.clone())).collect(),
    };
    for (key, path) in items {
        let text = data
            .get(&key)
            .ok_or_else(|| format!("ConfigMap {} has no key {key}", source.name))?;
        std::fs::write(dir.join(path), text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A kubeconfig for the pod's ServiceAccount: the cluster's server and CA, and the token the
/// token controller stored for the account (waited for, as it comes a moment after the account).
async fn service_account_kubeconfig(
    node: &Node,
    namespace: &str,
    spec: &k8s_openapi::api::core::v1::PodSpec,
    dir: &Path,
) -> Result<PathBuf, String> {
    use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
    let account = spec
        .service_account_name
        .clone()
        .unwrap_or_else(|| "default".into());
    let accounts: Api<ServiceAccount> = Api::namespaced(node.client.clone(), namespace);
    let secrets: Api<Secret> = Api::namespaced(node.client.clone(), namespace);
    let mut token = None;
    for _ in 0..100 {
        let sa = accounts
            .get(&account)
            .await
            .map_err(|e| format!("ServiceAccount {account}: {e}"))?;
        for reference in sa.secrets.iter().flatten() {
            let Some(secret_name) = &reference.name else {
                continue;
            };
            if let Ok(secret) = secrets.get(secret_name).await {
                token = secret.data.and_then(|d| {
                    d.get("token")
                        .map(|t| String::from_utf8_lossy(&t.0).into_owned())
                });
            }
        }
        if token.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let token = token.ok_or_else(|| format!("no token for ServiceAccount {account}"))?;
    let text = std::fs::read_to_string(&node.kubeconfig).map_err(|e| e.to_string())?;
    let mut config: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| e.to_string())?;
    config["users"] = serde_yaml::from_str(&format!("[{{name: admin, user: {{token: {token}}}}}]"))
        .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        serde_yaml::to_string(&config).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    Ok(path)
}

/// The value of a `fieldRef` the adapters use.
fn field(pod: &Pod, path: &str) -> String {
    let meta = &pod.metadata;
    if let Some(label) = path
        .strip_prefix("metadata.labels['")
        .and_then(|rest| rest.strip_suffix("']"))
    {
        return meta
            .labels
            .as_ref()
            .and_then(|l| l.get(label))
            .cloned()
            .unwrap_or_default();
    }
    match path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        other => panic!("the test kubelet does not resolve fieldRef {other}"),
    }
}

fn env_value(pod: &Pod, var: &EnvVar) -> String {
    match (&var.value, &var.value_from) {
        (Some(v), _) => v.clone(),
        (None, Some(from)) => match &from.field_ref {
            Some(f) => field(pod, &f.field_path),
            None => panic!("the test kubelet resolves only fieldRef ({})", var.name),
        },
        (None, None) => String::new(),
    }
}

/// Runs one container; `None` when the pod was deleted while it ran (it is killed then).
async fn run_container(
    node: &Node,
    pods: &Api<Pod>,
    pod: &Pod,
    c: &Container,
    volumes: &BTreeMap<String, PathBuf>,
    dir: &Path,
    kubeconfig: &Path,
) -> Option<Terminated> {
    let as_pipeline = kratix::api::pipeline::Container {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        command: c.command.clone(),
        args: c.args.clone(),
        ..Default::default()
    };
    let line = match resolve_command(&as_pipeline, &node.images) {
        Ok(line) => line,
        Err(refusal) => {
            return Some(Terminated {
                exit_code: 128,
                message: refusal.to_string(),
            })
        }
    };
    let tmp = dir.join("tmp").join(&c.name);
    let _ = std::fs::create_dir_all(&tmp);
    let mut cmd = tokio::process::Command::new(&line[0]);
    cmd.args(&line[1..])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &tmp)
        .env("TMPDIR", &tmp)
        .env("KUBECONFIG", kubeconfig)
        .current_dir(&tmp)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for var in c.env.iter().flatten() {
        cmd.env(&var.name, env_value(pod, var));
    }
    for mount in c.volume_mounts.iter().flatten() {
        let Some(path) = volumes.get(&mount.name) else {
            continue;
        };
        let var = match mount.mount_path.as_str() {
            "/kratix/input" => "KRATIX_INPUT_DIR",
            "/kratix/output" => "KRATIX_OUTPUT_DIR",
            "/kratix/metadata" => "KRATIX_METADATA_DIR",
            _ => continue,
        };
        cmd.env(var, path);
    }
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Some(Terminated {
                exit_code: 128,
                message: format!("cannot start {}: {e}", line[0]),
            })
        }
    };
    let name = pod.metadata.name.clone().unwrap_or_default();
    let mut output = Box::pin(child.wait_with_output());
    let out = loop {
        tokio::select! {
            out = &mut output => break out,
            () = tokio::time::sleep(Duration::from_millis(300)) => {
                let alive = matches!(pods.get_opt(&name).await, Ok(Some(p)) if p.metadata.deletion_timestamp.is_none());
                if !alive {
                    return None; // dropping the future kills the process
                }
            }
        }
    };
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            return Some(Terminated {
                exit_code: 128,
                message: e.to_string(),
            })
        }
    };
    let mut log = out.stdout;
    log.extend_from_slice(&out.stderr);
    let log = String::from_utf8_lossy(&log).into_owned();
    let _ = std::fs::write(dir.join(format!("{}.log", c.name)), &log);
    let exit_code = out.status.code().unwrap_or(137);
    let message = if exit_code == 0 {
        String::new()
    } else {
        tail(&log)
    };
    Some(Terminated { exit_code, message })
}

/// What FallbackToLogsOnError keeps of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let kept = lines[lines.len().saturating_sub(MESSAGE_LINES)..].join("\n");
    let start = kept.len().saturating_sub(MESSAGE_BYTES);
    let start = (start..=kept.len())
        .find(|i| kept.is_char_boundary(*i))
        .unwrap_or(0);
    kept[start..].to_string()
}
