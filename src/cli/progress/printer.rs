//! Shows progress: on a terminal (standard error) one line per object redrawn in place; when
//! standard error is not a terminal, one appended line per change there; with `-o json`, one
//! JSON event per line on standard output. Standard output keeps the commands' own lines
//! (`promise/x configured`) so scripts read them as before.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::{KindInfo, ObjectKey};
use crate::store::ControlPlane;

use super::{changes, line, status_of, Outcome, Status};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Nothing but the commands' own lines (`--quiet`).
    Quiet,
    /// One appended line per change on standard error.
    Plain,
    /// One line per object on standard error, redrawn in place.
    Terminal,
    /// One JSON event per line on standard output, the commands' own lines included.
    Json,
}

impl Mode {
    pub(crate) fn choose(quiet: bool, json: bool, stderr_is_terminal: bool) -> Mode {
        match (json, quiet, stderr_is_terminal) {
            (true, _, _) => Mode::Json,
            (false, true, _) => Mode::Quiet,
            (false, false, true) => Mode::Terminal,
            (false, false, false) => Mode::Plain,
        }
    }
}

/// Looks this often at least; the interval grows with the number of objects watched so that
/// progress never costs much next to the wait itself.
const MIN_INTERVAL: Duration = Duration::from_millis(200);
const OBJECTS_PER_INTERVAL: usize = 50;

/// Width of a terminal line when the terminal does not say (`COLUMNS`).
const DEFAULT_WIDTH: usize = 80;

#[derive(Debug)]
struct Target {
    kind: KindInfo,
    key: ObjectKey,
    label: String,
    shown: Option<Status>,
}

#[derive(Debug, Default)]
struct Inner {
    targets: Vec<Target>,
    /// Lines drawn on the terminal, to move back up over.
    drawn: usize,
    last_look: Option<Instant>,
}

/// The progress of one command.
#[derive(Debug)]
pub(crate) struct Progress {
    cp: Arc<dyn ControlPlane>,
    mode: Mode,
    inner: Mutex<Inner>,
}

impl Progress {
    pub(crate) fn new(cp: Arc<dyn ControlPlane>, mode: Mode) -> Self {
        Progress {
            cp,
            mode,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows these objects from now on (besides those followed already).
    pub(crate) fn follow(&self, objects: &[(KindInfo, ObjectKey)]) {
        let mut inner = self.lock();
        for (kind, key) in objects {
            if inner.targets.iter().any(|t| &t.key == key) {
                continue;
            }
            inner.targets.push(Target {
                kind: kind.clone(),
                key: key.clone(),
                label: format!("{}/{}", kind.kind.to_ascii_lowercase(), key.name),
                shown: None,
            });
        }
    }

    /// One of the command's own lines: as it is on standard output, or as a JSON event.
    pub(crate) fn say(&self, text: &str, event: Value) {
        let mut out = std::io::stdout().lock();
        let _ = match self.mode {
            Mode::Json => writeln!(out, "{event}"),
            _ => writeln!(out, "{text}"),
        };
    }

    /// Looks a last time, whenever the previous look was.
    pub(crate) async fn finish(&self) {
        self.look_now(true).await;
    }

    async fn look_now(&self, force: bool) {
        if self.mode == Mode::Quiet {
            return;
        }
        let targets: Vec<(KindInfo, ObjectKey)> = {
            let mut inner = self.lock();
            let interval = MIN_INTERVAL
                * u32::try_from(inner.targets.len() / OBJECTS_PER_INTERVAL + 1).unwrap_or(u32::MAX);
            if !force && inner.last_look.is_some_and(|at| at.elapsed() < interval) {
                return;
            }
            inner.last_look = Some(Instant::now());
            inner
                .targets
                .iter()
                .map(|t| (t.kind.clone(), t.key.clone()))
                .collect()
        };
        let mut seen = Vec::with_capacity(targets.len());
        for (kind, key) in &targets {
            // An object that cannot be read now is looked at again next time.
            if let Ok(obj) = self.cp.get(kind, key.namespace.as_deref(), &key.name).await {
                seen.push((key.clone(), status_of(kind, obj.as_ref())));
            }
        }
        let mut inner = self.lock();
        let mut changed = false;
        let mut lines = Vec::new();
        for (key, status) in seen {
            let Some(target) = inner.targets.iter_mut().find(|t| t.key == key) else {
                continue;
            };
            let found = changes(target.shown.as_ref(), &status);
            changed |= !found.is_empty();
            for change in &found {
                match self.mode {
                    Mode::Plain => lines.push(format!("{}: {}", target.label, change.text())),
                    Mode::Json => {
                        lines.push(json_event(&target.key, &target.kind, change).to_string());
                    }
                    Mode::Terminal | Mode::Quiet => {}
                }
            }
            target.shown = Some(status);
        }
        match self.mode {
            Mode::Plain => write_lines(&mut std::io::stderr().lock(), &lines),
            Mode::Json => write_lines(&mut std::io::stdout().lock(), &lines),
            Mode::Terminal if changed || inner.drawn == 0 => {
                let (block, drawn) = redraw(&inner.targets, inner.drawn, width());
                inner.drawn = drawn;
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(block.as_bytes());
                let _ = err.flush();
            }
            _ => {}
        }
    }
}

#[async_trait::async_trait]
impl crate::cli::driver::Observer for Progress {
    /// Looks at the followed objects, unless it did so very recently, and shows what changed.
    async fn look(&self) {
        self.look_now(false).await;
    }
}

fn write_lines(out: &mut dyn Write, lines: &[String]) {
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    let _ = out.flush();
}

/// One change as a JSON event: the object, then the change's fields.
pub(crate) fn json_event(key: &ObjectKey, kind: &KindInfo, change: &super::Change) -> Value {
    object_event(
        key,
        kind,
        serde_json::to_value(change).unwrap_or(Value::Null),
    )
}

/// A JSON event about an object: its kind, apiVersion, name and namespace, then `fields`.
pub(crate) fn object_event(key: &ObjectKey, kind: &KindInfo, fields: Value) -> Value {
    let mut event = json!({
        "kind": kind.kind,
        "apiVersion": kind.api_version(),
        "name": key.name,
    });
    if let Some(ns) = &key.namespace {
        event["namespace"] = json!(ns);
    }
    if let (Some(map), Value::Object(fields)) = (event.as_object_mut(), fields) {
        map.extend(fields);
    }
    event
}

fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w: &usize| *w > 10)
        .unwrap_or(DEFAULT_WIDTH)
}

/// At most this many lines are redrawn: moving up past the top of the screen is not possible,
/// so more objects than fit are summed up in the last line.
const MAX_LINES: usize = 20;

/// The terminal block: back up over the `drawn` lines, then one cleared line per object (cut
/// to `width`, so that no line wraps and throws the count off), and clear what is left below.
/// Returns the text and how many lines it drew.
fn redraw(targets: &[Target], drawn: usize, width: usize) -> (String, usize) {
    let lines = block(targets);
    let mut out = String::new();
    if drawn > 0 {
        out.push_str(&format!("\x1b[{drawn}A"));
    }
    for l in &lines {
        let cut: String = l.chars().take(width.saturating_sub(1)).collect();
        out.push_str("\r\x1b[2K");
        out.push_str(&cut);
        out.push('\n');
    }
    out.push_str("\x1b[J");
    (out, lines.len())
}

/// One line per object while they fit in [`MAX_LINES`]; otherwise the objects still under way
/// first and a last line counting the rest.
fn block(targets: &[Target]) -> Vec<String> {
    let label_width = targets.iter().map(|t| t.label.len()).max().unwrap_or(0);
    let show = |t: &Target| {
        let text = t.shown.as_ref().map_or_else(|| "…".into(), line);
        format!("{:<label_width$}  {text}", t.label)
    };
    if targets.len() <= MAX_LINES {
        return targets.iter().map(show).collect();
    }
    let done = |t: &&Target| {
        t.shown.as_ref().is_some_and(|s| {
            matches!(
                s.outcome,
                Outcome::Settled | Outcome::Failed(_) | Outcome::Gone
            )
        })
    };
    let mut lines: Vec<String> = targets
        .iter()
        .filter(|t| !done(t))
        .take(MAX_LINES - 1)
        .map(show)
        .collect();
    let count = |f: fn(&Outcome) -> bool| {
        targets
            .iter()
            .filter(|t| t.shown.as_ref().is_some_and(|s| f(&s.outcome)))
            .count()
    };
    lines.push(format!(
        "{} objects: {} settled, {} failed, {} deleted, {} under way",
        targets.len(),
        count(|o| matches!(o, Outcome::Settled)),
        count(|o| matches!(o, Outcome::Failed(_))),
        count(|o| matches!(o, Outcome::Gone)),
        targets.iter().filter(|t| !done(t)).count(),
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_follows_the_flags_then_the_terminal() {
        let cases = [
            (false, false, true, Mode::Terminal),
            (false, false, false, Mode::Plain),
            (true, false, true, Mode::Quiet),
            (true, false, false, Mode::Quiet),
            (false, true, true, Mode::Json),
            (true, true, false, Mode::Json),
        ];
        for (quiet, json, tty, want) in cases {
            assert_eq!(Mode::choose(quiet, json, tty), want, "{quiet} {json} {tty}");
        }
    }

    #[test]
    fn the_terminal_block_redraws_every_line_in_place() {
        let target = |label: &str, shown: Option<Status>| Target {
            kind: crate::platform::builtin(crate::api::Builtin::Promise),
            key: ObjectKey::new("g", "K", None, label),
            label: label.into(),
            shown,
        };
        let settled = Status {
            outcome: super::super::Outcome::Settled,
            ..Status::default()
        };
        let targets = [
            target("promise/a", Some(settled.clone())),
            target("promise/long-name", None),
        ];
        let cases = [
            (
                0,
                80,
                "\r\x1b[2Kpromise/a          settled\n\r\x1b[2Kpromise/long-name  …\n\x1b[J",
            ),
            (
                2,
                80,
                "\x1b[2A\r\x1b[2Kpromise/a          settled\n\r\x1b[2Kpromise/long-name  …\n\x1b[J",
            ),
            (0, 12, "\r\x1b[2Kpromise/a  \n\r\x1b[2Kpromise/lon\n\x1b[J"),
        ];
        for (drawn, width, want) in cases {
            assert_eq!(
                redraw(&targets, drawn, width),
                (want.to_string(), 2),
                "{drawn} {width}"
            );
        }
        // More objects than fit: those under way, then a count of everything.
        let many: Vec<Target> = (0..45)
            .map(|i| target(&format!("p/{i:02}"), (i % 3 == 0).then(|| settled.clone())))
            .collect();
        let lines = block(&many);
        assert_eq!(lines.len(), MAX_LINES, "{lines:#?}");
        assert!(
            lines[..MAX_LINES - 1].iter().all(|l| l.ends_with('…')),
            "{lines:#?}"
        );
        assert_eq!(
            lines.last().map(String::as_str),
            Some("45 objects: 15 settled, 0 failed, 0 deleted, 30 under way")
        );
    }
}
