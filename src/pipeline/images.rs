//! Which local command stands in for a container image, and how a container's command line and
//! environment are resolved (Kubernetes semantics).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::api::pipeline::Container;

/// Environment variable naming the image map file.
pub(crate) const IMAGE_MAP_ENV: &str = "KRATIX_IMAGE_MAP";
/// The image map's file name inside a kratix-rs home.
pub(crate) const HOME_IMAGE_MAP: &str = "images.yaml";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The image map file could not be read.
    #[error("cannot read image map {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The image map is not a YAML mapping of image to a list of strings.
    #[error("image map {path} is not a mapping of image to [command, args...]")]
    Parse {
        path: String,
        #[source]
        source: serde_yaml::Error,
    },
    /// An image maps to an empty command.
    #[error("image map {path}: image {image:?} maps to an empty command")]
    EmptyCommand { path: String, image: String },
}

/// Image -> local command, for containers that declare no `command`.
///
/// The mapped command plays the image's entrypoint: a container's `args` are appended to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageMap {
    commands: BTreeMap<String, Vec<String>>,
}

impl ImageMap {
    /// Loads `image: [cmd, args...]` from a YAML file. A relative program path containing a `/`
    /// (e.g. `./scripts/render.sh`) is taken relative to the file's folder, so a map can sit next
    /// to its scripts.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string(), path.parent())
    }

    /// The image map of a kratix-rs home: the file `KRATIX_IMAGE_MAP` names, else
    /// `<home>/images.yaml` when it exists, else an empty map (every container then needs a
    /// `command`).
    pub(crate) fn load_for_home(home: &Path) -> Result<Self, Error> {
        if let Some(path) = std::env::var_os(IMAGE_MAP_ENV).filter(|v| !v.is_empty()) {
            Self::load(Path::new(&path))
        } else {
            let path = home.join(HOME_IMAGE_MAP);
            if path.exists() {
                Self::load(&path)
            } else {
                Ok(Self::default())
            }
        }
    }

    /// Parses the YAML text of an image map; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str, base_dir: Option<&Path>) -> Result<Self, Error> {
        let parsed: Option<BTreeMap<String, Vec<String>>> =
            serde_yaml::from_str(text).map_err(|source| Error::Parse {
                path: origin.to_string(),
                source,
            })?;
        let mut map = ImageMap::default();
        for (image, mut command) in parsed.unwrap_or_default() {
            let Some(program) = command.first_mut() else {
                return Err(Error::EmptyCommand {
                    path: origin.to_string(),
                    image,
                });
            };
            if let Some(base) = base_dir {
                *program = anchor_program(program, base);
            }
            map.commands.insert(image, command);
        }
        Ok(map)
    }

    pub fn insert(&mut self, image: impl Into<String>, command: Vec<String>) {
        self.commands.insert(image.into(), command);
    }

    pub fn get(&self, image: &str) -> Option<&[String]> {
        self.commands.get(image).map(Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }
}

fn anchor_program(program: &str, base: &Path) -> String {
    let as_path = Path::new(program);
    if as_path.is_relative() && program.contains('/') {
        base.join(as_path).display().to_string()
    } else {
        program.to_string()
    }
}

/// Why a container cannot be started; the run fails with this message before any container runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No `command`, and the image has no local mapping.
    #[error("container {container:?}: image {image:?} has no local command; give the container a `command`, map the image in the image map, or run it in a container engine (KRATIX_EXECUTOR=auto or container)")]
    UnmappedImage { container: String, image: String },
    /// No `command` and no `image` either.
    #[error("container {container:?} has neither a command nor an image")]
    NothingToRun { container: String },
    /// `command: []`.
    #[error("container {container:?} has an empty command")]
    EmptyCommand { container: String },
    /// `valueFrom` needs a Kubernetes API server to resolve.
    #[error("container {container:?}: env {name:?} uses valueFrom, which the local executor cannot resolve; use value")]
    ValueFrom { container: String, name: String },
    /// An env entry without a name.
    #[error("container {container:?}: env entry has an empty name")]
    EmptyEnvName { container: String },
}

/// The command line of a container, as Kubernetes builds it: `command` replaces the entrypoint
/// and `args` are appended; without `command`, the image's mapped command is the entrypoint.
pub fn resolve_command(container: &Container, images: &ImageMap) -> Result<Vec<String>, Refusal> {
    let entrypoint: Vec<String> = match &container.command {
        Some(command) => command.clone(),
        None if container.image.is_empty() => {
            return Err(Refusal::NothingToRun {
                container: container.name.clone(),
            })
        }
        None => images
            .get(&container.image)
            .ok_or_else(|| Refusal::UnmappedImage {
                container: container.name.clone(),
                image: container.image.clone(),
            })?
            .to_vec(),
    };
    let mut line = entrypoint;
    line.extend(container.args.iter().flatten().cloned());
    if line.is_empty() {
        return Err(Refusal::EmptyCommand {
            container: container.name.clone(),
        });
    }
    Ok(line)
}

/// The container's own `env`, `value` only; an unset value is the empty string, as in Kubernetes.
pub(crate) fn container_env(container: &Container) -> Result<Vec<(String, String)>, Refusal> {
    container
        .env
        .iter()
        .map(|var| {
            if var.name.is_empty() {
                return Err(Refusal::EmptyEnvName {
                    container: container.name.clone(),
                });
            }
            if var.value_from.is_some() {
                return Err(Refusal::ValueFrom {
                    container: container.name.clone(),
                    name: var.name.clone(),
                });
            }
            Ok((var.name.clone(), var.value.clone().unwrap_or_default()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pipeline::EnvVar;

    fn container(image: &str, command: Option<&[&str]>, args: Option<&[&str]>) -> Container {
        let strings = |v: &[&str]| {
            v.iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
        };
        Container {
            name: "render".into(),
            image: image.into(),
            command: command.map(strings),
            args: args.map(strings),
            ..Container::default()
        }
    }

    #[test]
    fn command_resolution_follows_kubernetes() {
        let mut images = ImageMap::default();
        images.insert(
            "ghcr.io/acme/render:v1",
            vec!["/bin/render".into(), "--fast".into()],
        );
        type Case<'a> = (&'a str, Container, Result<Vec<&'a str>, Refusal>);
        let cases: Vec<Case> = vec![
            (
                "command and args",
                container("x", Some(&["sh", "-c"]), Some(&["echo hi"])),
                Ok(vec!["sh", "-c", "echo hi"]),
            ),
            (
                "command replaces the mapped entrypoint",
                container("ghcr.io/acme/render:v1", Some(&["true"]), None),
                Ok(vec!["true"]),
            ),
            (
                "mapped image",
                container("ghcr.io/acme/render:v1", None, None),
                Ok(vec!["/bin/render", "--fast"]),
            ),
            (
                "args appended to the mapped image",
                container("ghcr.io/acme/render:v1", None, Some(&["a", "b"])),
                Ok(vec!["/bin/render", "--fast", "a", "b"]),
            ),
            (
                "unmapped image",
                container("ghcr.io/acme/other:v2", None, None),
                Err(Refusal::UnmappedImage {
                    container: "render".into(),
                    image: "ghcr.io/acme/other:v2".into(),
                }),
            ),
            (
                "no command, no image",
                container("", None, Some(&["a"])),
                Err(Refusal::NothingToRun {
                    container: "render".into(),
                }),
            ),
            (
                "empty command",
                container("x", Some(&[]), None),
                Err(Refusal::EmptyCommand {
                    container: "render".into(),
                }),
            ),
        ];
        for (case, c, want) in cases {
            let want = want.map(|v| v.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(resolve_command(&c, &images), want, "{case}");
        }
    }

    #[test]
    fn unmapped_image_message_names_image_and_container() {
        let err = resolve_command(&container("acme/x:1", None, None), &ImageMap::default())
            .expect_err("no mapping");
        let msg = err.to_string();
        assert!(
            msg.contains("\"acme/x:1\"") && msg.contains("\"render\""),
            "{msg}"
        );
    }

    #[test]
    fn env_takes_values_and_refuses_value_from() {
        let mut c = container("x", Some(&["true"]), None);
        c.env = vec![
            EnvVar {
                name: "A".into(),
                value: Some("1".into()),
                value_from: None,
            },
            EnvVar {
                name: "EMPTY".into(),
                value: None,
                value_from: None,
            },
        ];
        assert_eq!(
            container_env(&c),
            Ok(vec![
                ("A".into(), "1".into()),
                ("EMPTY".into(), String::new())
            ])
        );
        c.env.push(EnvVar {
            name: "SECRET".into(),
            value: None,
            value_from: Some(serde_json::json!({"secretKeyRef": {"name": "s", "key": "k"}})),
        });
        let err = container_env(&c).expect_err("valueFrom refused");
        assert_eq!(
            err,
            Refusal::ValueFrom {
                container: "render".into(),
                name: "SECRET".into()
            }
        );
        assert!(err.to_string().contains("\"render\""));
    }

    #[test]
    fn image_map_parses_and_anchors_relative_scripts() {
        let yaml =
            "acme/render:v1: [./scripts/render.sh, --fast]\nacme/sh:v1: [sh, -c, 'echo hi']\n";
        let map = ImageMap::parse(yaml, "images.yaml", Some(Path::new("/srv/fixtures")))
            .expect("valid map");
        assert_eq!(
            map.get("acme/render:v1"),
            Some(
                &[
                    "/srv/fixtures/./scripts/render.sh".to_string(),
                    "--fast".to_string()
                ][..]
            )
        );
        assert_eq!(
            map.get("acme/sh:v1"),
            Some(&["sh".to_string(), "-c".to_string(), "echo hi".to_string()][..])
        );
        assert!(ImageMap::parse("", "e.yaml", None)
            .expect("empty")
            .is_empty());
    }

    #[test]
    fn image_map_rejects_bad_shapes() {
        let cases = [
            ("acme/x: []\n", "empty command"),
            ("acme/x: echo\n", "mapping of image"),
            ("- a\n", "mapping of image"),
        ];
        for (yaml, want) in cases {
            let err = ImageMap::parse(yaml, "images.yaml", None).expect_err(yaml);
            assert!(err.to_string().contains(want), "{yaml}: {err}");
        }
    }

    #[test]
    fn home_image_map_is_optional() {
        // NB: the test does not set KRATIX_IMAGE_MAP itself, as that would race other tests.
        assert!(
            std::env::var_os(IMAGE_MAP_ENV).is_none(),
            "unset {IMAGE_MAP_ENV} to run this test"
        );
        let home = tempfile::tempdir().expect("tempdir");
        assert!(ImageMap::load_for_home(home.path())
            .expect("no file")
            .is_empty());
        std::fs::write(home.path().join(HOME_IMAGE_MAP), "acme/x:1: [true]\n").expect("write");
        let map = ImageMap::load_for_home(home.path()).expect("file");
        assert_eq!(map.get("acme/x:1"), Some(&["true".to_string()][..]));
        std::fs::write(home.path().join(HOME_IMAGE_MAP), "acme/x:1: true\n").expect("write");
        let err = ImageMap::load_for_home(home.path()).expect_err("bad file");
        assert!(err.to_string().contains("images.yaml"), "{err}");
    }

    #[test]
    fn image_map_loads_from_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("images.yaml");
        std::fs::write(&path, "acme/x:1: [./run.sh]\n").expect("write");
        let map = ImageMap::load(&path).expect("load");
        assert_eq!(
            map.get("acme/x:1"),
            Some(&[dir.path().join("./run.sh").display().to_string()][..])
        );
        let missing = ImageMap::load(&dir.path().join("nope.yaml")).expect_err("missing");
        assert!(missing.to_string().contains("nope.yaml"));
    }
}
