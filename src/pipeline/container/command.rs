//! A container's entrypoint and command in the engine, by Kubernetes' rules: `command` replaces
//! the image's ENTRYPOINT and drops its CMD; `args` alone replace CMD; neither keeps both.

use crate::api::pipeline::Container;

/// What to give the engine; `None` keeps the image's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EngineCommand {
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
}

pub(crate) fn engine_command(container: &Container) -> EngineCommand {
    match (&container.command, &container.args) {
        (Some(command), args) => EngineCommand {
            entrypoint: Some(command.clone()),
            // An empty CMD, not the image's: Kubernetes drops it once `command` is given.
            cmd: Some(args.clone().unwrap_or_default()),
        },
        (None, Some(args)) => EngineCommand {
            entrypoint: None,
            cmd: Some(args.clone()),
        },
        (None, None) => EngineCommand {
            entrypoint: None,
            cmd: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_kubernetes() {
        let v = |s: &[&str]| {
            s.iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
        };
        let cases = [
            ("neither", None, None, None, None),
            ("args only", None, Some(v(&["a"])), None, Some(v(&["a"]))),
            (
                "command only",
                Some(v(&["sh", "-c"])),
                None,
                Some(v(&["sh", "-c"])),
                Some(vec![]),
            ),
            (
                "both",
                Some(v(&["sh"])),
                Some(v(&["-c", "x"])),
                Some(v(&["sh"])),
                Some(v(&["-c", "x"])),
            ),
        ];
        for (case, command, args, entrypoint, cmd) in cases {
            let c = Container {
                name: "c".into(),
                image: "i".into(),
                command,
                args,
                ..Container::default()
            };
            assert_eq!(
                engine_command(&c),
                EngineCommand { entrypoint, cmd },
                "{case}"
            );
        }
    }
}
