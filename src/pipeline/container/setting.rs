//! Where each container of a pipeline runs: on the host (sandboxed or as a plain process) or in a
//! container engine from its image. `KRATIX_EXECUTOR` chooses; the decision per container is a
//! pure function of the setting, the container, the image map and what the host can run.

use std::str::FromStr;

use crate::api::pipeline::Container;

use super::super::Isolation;

/// Environment variable choosing the executor: `container`, `sandbox`, `process` or `auto`.
pub(crate) const EXECUTOR_ENV: &str = "KRATIX_EXECUTOR";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{EXECUTOR_ENV}={value:?} is not one of container, sandbox, process, auto")]
    Unknown { value: String },
    /// Both settings name a host isolation, and they disagree.
    #[error("{EXECUTOR_ENV}={executor} and KRATIX_ISOLATION={isolation} disagree; set only {EXECUTOR_ENV}")]
    Conflict {
        executor: &'static str,
        isolation: &'static str,
    },
    #[error(transparent)]
    Isolation(#[from] crate::pipeline::isolation::Error),
}

/// The `KRATIX_EXECUTOR` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExecutorSetting {
    /// Every container in the engine, from its image.
    Container,
    /// Every container on the host in a bubblewrap sandbox.
    Sandbox,
    /// Every container on the host as a plain process.
    Process,
    /// Per container: on the host when it can run there, else in the engine.
    #[default]
    Auto,
}

impl FromStr for ExecutorSetting {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "container" | "engine" | "docker" | "podman" => Ok(Self::Container),
            "sandbox" | "bwrap" | "bubblewrap" => Ok(Self::Sandbox),
            "process" => Ok(Self::Process),
            "auto" | "" => Ok(Self::Auto),
            _ => Err(Error::Unknown {
                value: s.to_string(),
            }),
        }
    }
}

/// The mode of a run: where containers may go, and how host containers are isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mode {
    pub setting: ExecutorSetting,
    pub isolation: Isolation,
}

impl Mode {
    /// Reads `KRATIX_EXECUTOR` and `KRATIX_ISOLATION` (see [`mode`]).
    pub(crate) fn from_env() -> Result<Self, Error> {
        let setting = match std::env::var(EXECUTOR_ENV) {
            Ok(value) => value.parse()?,
            Err(std::env::VarError::NotPresent) => ExecutorSetting::Auto,
            Err(std::env::VarError::NotUnicode(value)) => {
                return Err(Error::Unknown {
                    value: value.to_string_lossy().into_owned(),
                })
            }
        };
        let isolation = Isolation::from_env()?;
        let explicit = std::env::var_os(super::super::isolation::ISOLATION_ENV).is_some();
        mode(setting, isolation, explicit)
    }
}

/// How the two settings combine: `KRATIX_EXECUTOR=sandbox|process` is the host isolation (an
/// explicit `KRATIX_ISOLATION` naming the other one is refused); `auto` and `container` keep
/// `KRATIX_ISOLATION` for the containers that run on the host.
pub(crate) fn mode(
    setting: ExecutorSetting,
    isolation: Isolation,
    isolation_explicit: bool,
) -> Result<Mode, Error> {
    let host = match setting {
        ExecutorSetting::Sandbox => Some((Isolation::Sandbox, "sandbox")),
        ExecutorSetting::Process => Some((Isolation::Process, "process")),
        _ => None,
    };
    match host {
        None => Ok(Mode { setting, isolation }),
        Some((wanted, executor)) => {
            if isolation_explicit && isolation != wanted && isolation != Isolation::Auto {
                return Err(Error::Conflict {
                    executor,
                    isolation: match isolation {
                        Isolation::Sandbox => "sandbox",
                        _ => "process",
                    },
                });
            }
            Ok(Mode {
                setting,
                isolation: wanted,
            })
        }
    }
}

/// Where one container goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    Host,
    Engine,
    /// In the engine when one is reachable, else on the host (a command the host may still
    /// start, or fail to, as without an engine).
    EngineElseHost,
}

/// The rule of `auto`: a container with a `command` whose program the host can run, or whose
/// image is in the image map, runs on the host; any other container with an image runs in the
/// engine. `container` sends every container with an image to the engine; `sandbox` and
/// `process` keep every container on the host.
pub(crate) fn placement(
    setting: ExecutorSetting,
    container: &Container,
    mapped: bool,
    host_runs_command: bool,
) -> Placement {
    let has_image = !container.image.is_empty();
    match setting {
        ExecutorSetting::Sandbox | ExecutorSetting::Process => Placement::Host,
        ExecutorSetting::Container if has_image => Placement::Engine,
        ExecutorSetting::Container => Placement::Host,
        ExecutorSetting::Auto => {
            if !has_image || mapped && container.command.is_none() || host_runs_command {
                Placement::Host
            } else if container.command.is_some() {
                Placement::EngineElseHost
            } else {
                Placement::Engine
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(image: &str, command: Option<&str>) -> Container {
        Container {
            name: "c".into(),
            image: image.into(),
            command: command.map(|c| vec![c.to_string()]),
            ..Container::default()
        }
    }

    #[test]
    fn placement_per_setting() {
        use ExecutorSetting::*;
        use Placement::*;
        let cases = [
            (
                "auto: host command",
                Auto,
                c("img", Some("sh")),
                false,
                true,
                Host,
            ),
            (
                "auto: mapped image",
                Auto,
                c("img", None),
                true,
                false,
                Host,
            ),
            (
                "auto: image only",
                Auto,
                c("img", None),
                false,
                false,
                Engine,
            ),
            (
                "auto: command the host lacks",
                Auto,
                c("img", Some("helm")),
                false,
                false,
                EngineElseHost,
            ),
            ("auto: no image", Auto, c("", Some("sh")), false, true, Host),
            ("auto: nothing", Auto, c("", None), false, false, Host),
            (
                "container: host command",
                Container,
                c("img", Some("sh")),
                false,
                true,
                Engine,
            ),
            (
                "container: mapped",
                Container,
                c("img", None),
                true,
                false,
                Engine,
            ),
            (
                "container: no image",
                Container,
                c("", Some("sh")),
                false,
                true,
                Host,
            ),
            (
                "sandbox: image only",
                Sandbox,
                c("img", None),
                false,
                false,
                Host,
            ),
            (
                "process: image only",
                Process,
                c("img", None),
                false,
                false,
                Host,
            ),
        ];
        for (case, setting, container, mapped, runs, want) in cases {
            assert_eq!(placement(setting, &container, mapped, runs), want, "{case}");
        }
    }

    #[test]
    fn settings_combine() {
        use ExecutorSetting::*;
        let cases = [
            (Auto, Isolation::Process, true, Ok(Isolation::Process)),
            (Container, Isolation::Auto, false, Ok(Isolation::Auto)),
            (Sandbox, Isolation::Auto, false, Ok(Isolation::Sandbox)),
            (Process, Isolation::Auto, true, Ok(Isolation::Process)),
            (Process, Isolation::Process, true, Ok(Isolation::Process)),
            (Process, Isolation::Sandbox, true, Err("disagree")),
            (Sandbox, Isolation::Process, true, Err("disagree")),
        ];
        for (setting, isolation, explicit, want) in cases {
            let got = mode(setting, isolation, explicit);
            match (got, want) {
                (Ok(m), Ok(iso)) => assert_eq!((m.setting, m.isolation), (setting, iso)),
                (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{e}"),
                (got, want) => panic!("{setting:?} {isolation:?}: {got:?} != {want:?}"),
            }
        }
    }

    #[test]
    fn parses_settings() {
        let cases = [
            ("container", Some(ExecutorSetting::Container)),
            ("Podman", Some(ExecutorSetting::Container)),
            ("sandbox", Some(ExecutorSetting::Sandbox)),
            ("process", Some(ExecutorSetting::Process)),
            ("", Some(ExecutorSetting::Auto)),
            ("kube", None),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<ExecutorSetting>().ok(), want, "{text:?}");
        }
    }
}
