//! What a shell is completing, from the words typed so far: the KIND or the NAME of a command
//! that takes them. Pure, so that the completion scripts stay tiny and the rules are tested here.

/// What the word being typed should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Want {
    /// A kind (plural names, including the kinds Promises define).
    Kind,
    /// The name of an object of `kind`, in `namespace` (`None`: every namespace).
    Name {
        kind: String,
        namespace: Option<String>,
    },
    /// Something the command definitions already complete (flags, files, values).
    Other,
}

/// The words typed so far, as the completion scripts pass them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Typed {
    pub want: Want,
    /// `--home` when typed, which then overrides the environment.
    pub home: Option<String>,
}

/// Commands whose first two positional arguments are KIND and NAME.
const KIND_NAME_COMMANDS: &[&str] = &[
    "get",
    "delete",
    "wait",
    "reconcile",
    "logs",
    "label",
    "annotate",
    "describe",
    "tree",
    "events",
];

/// Flags followed by a value, over all those commands.
const VALUE_FLAGS: &[&str] = &[
    "--home",
    "-n",
    "--namespace",
    "-l",
    "--selector",
    "-o",
    "--output",
    "--for",
    "--timeout",
    "--pipeline",
    "-f",
    "--filename",
];

/// `words`: the command line after the program's name, the word being typed last (possibly
/// empty).
pub(super) fn typed(words: &[String]) -> Typed {
    let mut home = None;
    let mut namespace = Some("default".to_string());
    let mut command: Option<&str> = None;
    let mut positionals: Vec<&str> = Vec::new();
    let mut files = false;
    let Some((current, before)) = words.split_last() else {
        return Typed {
            want: Want::Other,
            home,
        };
    };
    let mut i = 0;
    let mut after_value_flag = false;
    while i < before.len() {
        let word = before[i].as_str();
        after_value_flag = false;
        if let Some((flag, value)) = word.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            take_flag(flag, value, &mut home, &mut namespace, &mut files);
        } else if VALUE_FLAGS.contains(&word) {
            match before.get(i + 1) {
                Some(value) => {
                    take_flag(word, value, &mut home, &mut namespace, &mut files);
                    i += 1;
                }
                None => after_value_flag = true,
            }
        } else if word == "-A" || word == "--all-namespaces" {
            namespace = None;
        } else if word.starts_with('-') {
            // A switch: nothing follows it.
        } else if command.is_none() {
            command = Some(word);
        } else {
            positionals.push(word);
        }
        i += 1;
    }
    let want = match command {
        Some(c) if KIND_NAME_COMMANDS.contains(&c) && !after_value_flag && !files => {
            if current.starts_with('-') {
                Want::Other
            } else {
                match positionals.as_slice() {
                    [] => Want::Kind,
                    [kind] => Want::Name {
                        kind: kind.to_string(),
                        namespace,
                    },
                    _ => Want::Other,
                }
            }
        }
        _ => Want::Other,
    };
    Typed { want, home }
}

fn take_flag(
    flag: &str,
    value: &str,
    home: &mut Option<String>,
    namespace: &mut Option<String>,
    files: &mut bool,
) {
    match flag {
        "--home" => *home = Some(value.to_string()),
        // NB: after `-A`, every namespace whatever `-n` says, as kubectl does.
        "-n" | "--namespace" if namespace.is_some() => *namespace = Some(value.to_string()),
        "-f" | "--filename" => *files = true,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(kind: &str, namespace: Option<&str>) -> Want {
        Want::Name {
            kind: kind.into(),
            namespace: namespace.map(str::to_string),
        }
    }

    #[test]
    fn kinds_then_names_of_commands_that_take_them() {
        let cases = [
            ("", Want::Other),
            ("ge", Want::Other),
            ("get ", Want::Kind),
            ("get pro", Want::Kind),
            ("get promises ", name("promises", Some("default"))),
            ("get promises re", name("promises", Some("default"))),
            ("get promises redis ", Want::Other),
            ("get -n team redis ", name("redis", Some("team"))),
            ("get redis -n team ", name("redis", Some("team"))),
            ("get redis --namespace=team ", name("redis", Some("team"))),
            ("get -A redis ", name("redis", None)),
            ("get redis -A -n team ", name("redis", None)),
            ("get redis -o ", Want::Other),
            ("get redis --", Want::Other),
            ("get -o json ", Want::Kind),
            ("--home /srv/k get ", Want::Kind),
            ("delete -f ", Want::Other),
            ("delete -f x.yaml ", Want::Other),
            (
                "delete workplacements ",
                name("workplacements", Some("default")),
            ),
            ("wait work w1 --for ", Want::Other),
            ("label promise redis ", Want::Other),
            ("apply ", Want::Other),
            ("serve ", Want::Other),
            ("completion ", Want::Other),
        ];
        for (line, want) in cases {
            let words: Vec<String> = line.split(' ').map(str::to_string).collect();
            assert_eq!(typed(&words).want, want, "{line:?}");
        }
    }

    #[test]
    fn a_typed_home_is_used() {
        let cases = [
            ("get ", None),
            ("--home /srv/k get ", Some("/srv/k")),
            ("--home=/srv/k get ", Some("/srv/k")),
            ("get promises --home h ", Some("h")),
        ];
        for (line, want) in cases {
            let words: Vec<String> = line.split(' ').map(str::to_string).collect();
            assert_eq!(typed(&words).home.as_deref(), want, "{line:?}");
        }
    }
}
